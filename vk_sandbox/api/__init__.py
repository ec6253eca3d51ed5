"""The sandbox's API layer: request parsing, decoding, defaulting, validation, handlers and responses.

Subpackages: `handlers/` (the endpoints of resource requests) and `validation/` (names, field
errors, schema walk, kind rules). Must not: hold objects itself (storage/ does) or run loops
(controllers/ do).
"""
