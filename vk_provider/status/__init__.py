"""Pod status: pure generation (generate.py) and the versioned status manager writing it (manager.py)."""
