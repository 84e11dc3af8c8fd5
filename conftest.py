"""Repository-wide pytest plugins: oracle tests fail instead of skipping (oracle_data.py)."""

pytest_plugins = ("oracle_data",)
