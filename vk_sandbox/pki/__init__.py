"""The sandbox's PKI: its certificate authority and certificates, and its service account tokens.

Must not: talk to the network or the store.
"""
