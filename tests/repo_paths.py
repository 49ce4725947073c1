"""Where the tests find things, whichever room (folder) a test lives in: the repository root and
the tests folder with its shared data (conformance/, fixtures/, memory/, release/, the probe's
recorded device files)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
