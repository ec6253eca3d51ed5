"""Object validation as the real apiserver words it: names, field errors, schema walk, kind rules.

`names.py` (apimachinery format checks) and `field.py` (StatusCause constructors) are the ground
floor; `schema.py` walks an object against the official schemas; `kinds.py` adds the hand-written
rules of `pkg/apis/*/validation`. Must not: touch the store or raise ApiError.
"""
