"""The two labels of every harmonised table, suite, predictions file and
metrics document: one definition, imported wherever a label is spelt (a
module of its own so that the many stages that import it re-run only when
the labels themselves change)."""

HATEFUL, NON_HATEFUL = "hateful", "non-hateful"
LABELS = (HATEFUL, NON_HATEFUL)
