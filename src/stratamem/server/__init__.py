"""REST server surface: FastAPI app, API-key/JWT auth, error mapping, rate limiting.

Import :func:`stratamem.server.app.create_app` to build the app; this package's ``__init__`` stays free
of FastAPI imports so that importing :mod:`stratamem.server.schema` (a migration) stays cheap.
"""
