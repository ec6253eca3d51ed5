"""Apiserver access: the dict-based client, the list+watch reflector and the Event recorder."""
