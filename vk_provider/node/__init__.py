"""The virtual Node: its object, conditions, registration, lease and status (NodeAgent)."""
