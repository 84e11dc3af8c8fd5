"""Pure request builders and response/stream mappers, one module per provider API (no SDK imports).

Each module maps a :class:`~actoviq.providers.ModelRequest` to the provider's JSON body and the
provider's JSON (responses and stream events, as plain dicts) back to canonical values. They are
used by the SDK adapters, by the golden-vector and corpus tests, and by the release gate.
"""

from actoviq.providers.mapping._common import MappingOptions

__all__ = ["MappingOptions"]
