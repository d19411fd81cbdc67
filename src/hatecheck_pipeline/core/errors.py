"""The base of every expected error: bad input, bad configuration, a failed
expectation, a missing artifact. The CLI prints these as one line (no
traceback) and exits 1."""


class PipelineError(Exception):
    """An error whose message says what is wrong and where (file, row, key)."""
