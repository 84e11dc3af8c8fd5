import sys
from pathlib import Path

# Test helpers (providers_support.py) are imported by name; importlib mode does not add this dir.
sys.path.insert(0, str(Path(__file__).resolve().parent))
