"""Everything the test files share that is not a test: helpers, builders, fakes and fixtures.

One module per job (the table in docs/testing.md lists them): waiting (`polling`), ports,
image names, Pod manifests and status readers, the control planes and harnesses, in-memory
stand-ins, and the fixture plugins registered by tests/conftest.py. Must not: hold tests, or
import from a test module (a helper two test files need moves here instead).
"""
