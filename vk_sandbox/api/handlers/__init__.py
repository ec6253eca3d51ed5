"""HTTP handlers of resource requests: routing, the verbs, watch, action subresources and reviews.

Must not: implement storage semantics (storage/) or validation rules (api/validation/).
"""
