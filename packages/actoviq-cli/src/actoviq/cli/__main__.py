"""``python -m actoviq.cli``: the ``actoviq`` command."""

from actoviq.cli.main import main

main()
