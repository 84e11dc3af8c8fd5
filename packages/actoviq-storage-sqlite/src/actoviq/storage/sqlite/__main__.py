"""``python -m actoviq.storage.sqlite``: see :mod:`actoviq.storage.sqlite.cli`."""

from actoviq.storage.sqlite.cli import main

raise SystemExit(main())
