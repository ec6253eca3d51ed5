"""The sandbox's storage: the in-memory object store, its watch log and the selectors lists filter by.

Must not: know about HTTP (api/ decodes requests and renders responses).
"""
