"""The sandbox's controllers: scheduler, node lifecycle and CSR signer, each a loop over the store.

Must not: talk HTTP; they read and write objects through `storage.store.Store` only.
"""
