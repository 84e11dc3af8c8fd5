"""The local web chat page of ``actoviq serve`` (needs the ``web`` extra).

Import :mod:`actoviq.cli.web.app` for the Starlette app; this package itself imports nothing.
"""
