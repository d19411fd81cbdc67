"""Small raw files for the broken-input tests (tests/data, tests/reliability)."""

HEADER = ",count,hate_speech,offensive_language,neither,class,tweet\n"  # Davidson et al. 2017's labeled_data.csv
SPLIT = {"seed": 1, "split": {"train": 0.8, "dev": 0.1, "test": 0.1}}


def davidson_rows(n: int = 20) -> str:
    return "".join(f"{i},3,0,0,3,{0 if i % 5 == 0 else 2},tweet number {i}\n" for i in range(n))


def reasons(h):
    """{raw row: quarantine reason} of a harmonised dataset."""
    return dict(zip(h.quarantine["row"].to_list(), h.quarantine["reason"].to_list()))
