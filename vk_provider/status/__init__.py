"""Pod status: the vocabulary (fields.py), the pure generation (generate.py with phase.py,
conditions.py, qos.py), the cache rules (cache.py, writeback.py) and the versioned status
manager writing it (manager.py)."""
