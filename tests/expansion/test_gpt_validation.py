"""GPT-HateCheck validation (appendix B, Table 13; the Boolean rules of the
authors' notebook) with a SCRIPTED judge: a deterministic fake of the judge
interface that entails exactly the (premise, hypothesis) pairs a test gives
it, so that every rule, the two-part tests of F12/F13/F20 and F15's negation
removal can be checked, and the paper's Table 5 failure cases are rejected."""

import json

import polars as pl
import pytest

from hatecheck_pipeline.expansion import generate, nli

TARGETS = ["women", "trans people", "gay people", "black people", "disabled people", "Muslims", "immigrants"]
HATE = "That contains hate speech."


def about(target: str) -> str:
    return f"That example is about {target}."


class ScriptedJudge:
    """Entails exactly the given pairs (P = 0.9), nothing else (P = 0.1);
    ``everything=True``: entails every pair. Records what it was asked."""

    name = "scripted test judge"

    def __init__(self, entailed=(), everything: bool = False, p: dict | None = None):
        self.entailed, self.everything, self.p = set(entailed), everything, p or {}
        self.asked: list[tuple[str, str]] = []

    def entailment(self, pairs):
        self.asked += list(pairs)
        return [self.p.get(pair, 0.9 if self.everything or pair in self.entailed else 0.1) for pair in pairs]


@pytest.fixture(scope="module")
def spec():
    return nli.load_spec()


def check(spec, text, functionality, target, judge):
    case = {"text": text, "functionality": functionality, "target_ident": target}
    return nli.validate([case], spec, judge, 0.5, TARGETS)[0]


def test_the_spec_covers_the_24_functionalities_with_valid_tests(spec):
    assert len(spec["tests"]) == 24
    assert spec["negation_words"] == ["no", "not", "never", "neither"]


# ------------------------------------------------ Table 5's failure cases


def test_table_5_f8_islam_is_about_muslims_so_it_is_rejected(spec):
    text = "I find the call to prayer in Islam to be quite melodious and soothing."
    res = check(spec, text, "slur_homonym_nh", "Muslims", ScriptedJudge({(text, about("Muslims"))}))
    assert not res["accepted"] and res["failed_test"] == "NOT identity"
    ok = check(spec, "I had this queer feeling we were being watched.", "slur_homonym_nh", "gay people", ScriptedJudge())
    assert ok["accepted"]


def test_table_5_f15_without_a_negation_is_rejected(spec):
    text = "Women deserve to be celebrated and empowered."
    judge = ScriptedJudge(
        {(text, about("women")), ("Women deserve to be celebrated and empowered .", "That text contains hate speech against women.")}
    )
    res = check(spec, text, "negate_neg_nh", "women", judge)
    assert not res["accepted"] and res["failed_test"] == "That text contains a negation."


def test_f15_removes_the_negation_words_before_its_second_test(spec):
    text = "No women deserve to die."
    stripped = "women deserve to die ."  # the notebook: word tokens without no/not/never/neither
    judge = ScriptedJudge(
        {(text, about("women")), (text, "That text contains a negation."), (stripped, "That text contains hate speech against women.")}
    )
    res = check(spec, text, "negate_neg_nh", "women", judge)
    assert res["accepted"], res
    assert (stripped, "That text contains hate speech against women.") in judge.asked
    # the negated statement itself is not hateful: without the removal the case would fail
    judge2 = ScriptedJudge(
        {(text, about("women")), (text, "That text contains a negation."), (text, "That text contains hate speech against women.")}
    )
    assert check(spec, text, "negate_neg_nh", "women", judge2)["failed_test"] == (
        "That text contains hate speech against [identity]. @negation_removed"
    )
    assert nli.remove_negation("Trans rights are not a threat, never.", spec["negation_words"]) == ("Trans rights are a threat , .")
    assert nli.remove_negation("Women don't deserve it", spec["negation_words"]) == "Women do n't deserve it"


def test_f14_tests_the_positive_statement_without_its_negation(spec):
    text = "Disabled people are never intelligent."
    judge = ScriptedJudge(
        {
            (text, about("disabled people")),
            (text, "That text contains a negation."),
            ("Disabled people are intelligent .", "That text is a positive statement towards disabled people."),
        }
    )
    assert check(spec, text, "negate_pos_h", "disabled people", judge)["accepted"]


def test_table_5_f12_with_one_clause_is_rejected_whatever_the_judge_says(spec):
    text = "I feel nothing but disdain for immigrants who come here and refuse to learn our language."
    res = check(spec, text, "ref_subs_clause_h", "immigrants", ScriptedJudge(everything=True))
    assert not res["accepted"] and res["failed_test"] == "hate @subsequent_clause"
    tests = json.loads(res["tests"])
    assert tests[-1] == {"test": "hate @subsequent_clause", "passed": False, "p_entailment": None}


def test_f12_tests_the_whole_text_and_the_clause_after_the_first_comma_apart(spec):
    text = "I have met many immigrants, and I hate every single one of them."
    second = "and I hate every single one of them."
    judge = ScriptedJudge({(text, about("immigrants")), (text, HATE), (second, HATE)})
    assert check(spec, text, "ref_subs_clause_h", "immigrants", judge)["accepted"]
    # hateful as a whole, but the second clause carries no hate: rejected
    judge = ScriptedJudge({(text, about("immigrants")), (text, HATE)})
    res = check(spec, text, "ref_subs_clause_h", "immigrants", judge)
    assert not res["accepted"] and res["failed_test"] == "hate @subsequent_clause"
    assert (second, HATE) in judge.asked


def test_table_5_f13_hate_in_the_first_sentence_only_is_rejected(spec):
    text = "I'm sorry, but disabled people like you are just a burden on society. It's time to accept the truth."
    judge = ScriptedJudge(
        {(text, about("disabled people")), (text, HATE), ("I'm sorry, but disabled people like you are just a burden on society.", HATE)}
    )
    res = check(spec, text, "ref_subs_sent_h", "disabled people", judge)
    assert not res["accepted"] and res["failed_test"] == "hate @subsequent_sentences"
    assert ("It's time to accept the truth.", HATE) in judge.asked
    good = "Some women get into government. They are still just common trash to me."
    judge = ScriptedJudge({(good, about("women")), (good, HATE), ("They are still just common trash to me.", HATE)})
    assert check(spec, good, "ref_subs_sent_h", "women", judge)["accepted"]
    one = check(spec, "Women are trash.", "ref_subs_sent_h", "women", ScriptedJudge(everything=True))
    assert one["failed_test"] == "hate @subsequent_sentences"


def test_f13_tests_the_sentences_after_the_first_joined_into_one_premise(spec):
    text = "I met some trans people today. They were polite. Still, they are vermin to me!"
    later = "They were polite. Still, they are vermin to me!"
    judge = ScriptedJudge({(text, about("trans people")), (text, HATE), (later, HATE)})
    assert check(spec, text, "ref_subs_sent_h", "trans people", judge)["accepted"]
    asked = {premise for premise, hypothesis in judge.asked if hypothesis == HATE}
    assert asked == {text, later}  # one premise for the later sentences, not one per sentence
    # the third sentence alone would be hateful, but the joined premise is what is tested
    judge = ScriptedJudge({(text, about("trans people")), (text, HATE), ("Still, they are vermin to me!", HATE)})
    res = check(spec, text, "ref_subs_sent_h", "trans people", judge)
    assert not res["accepted"] and res["failed_test"] == "hate @subsequent_sentences"


def test_table_5_f18_a_positive_statement_is_rejected(spec):
    text = "The LGBTQ+ community has made significant contributions to art, literature, and culture throughout history."
    judge = ScriptedJudge({(text, about("gay people")), (text, "That text is a very positive statement.")})
    res = check(spec, text, "ident_neutral_nh", "gay people", judge)
    assert not res["accepted"] and res["failed_test"] == "NOT That text is a very positive statement."
    neutral = "Gay people live in every country."
    assert check(spec, neutral, "ident_neutral_nh", "gay people", ScriptedJudge({(neutral, about("gay people"))}))["accepted"]


# ------------------------------------------------------ the other rules


def test_f20_tests_the_quote_and_the_text_around_it_apart(spec):
    text = "Statements like 'gay people are scum' are deeply hurtful."
    judge = ScriptedJudge({(text, about("gay people")), ("gay people are scum", HATE)})
    assert check(spec, text, "counter_quote_nh", "gay people", judge)["accepted"]
    assert ("Statements like [X] are deeply hurtful.", "This text supports [X]") in judge.asked
    supports = ScriptedJudge(
        {(text, about("gay people")), ("gay people are scum", HATE), ("Statements like [X] are deeply hurtful.", "This text supports [X]")}
    )
    assert check(spec, text, "counter_quote_nh", "gay people", supports)["failed_test"] == ("NOT This text supports [X] @quote_context")
    for bad in ("Calling gay people scum is deeply hurtful.", "Both 'a' and 'b' are hurtful."):
        assert check(spec, bad, "counter_quote_nh", "gay people", ScriptedJudge(everything=True))["failed_test"] == ("hate @quote")


def test_f9_passes_on_any_of_its_three_tests(spec):
    text = "We bitches stick together."
    neg = (text, "This text has a negative sentiment.")
    base = {(text, about("women"))}
    assert not check(spec, text, "slur_reclaimed_nh", "women", ScriptedJudge(base | {neg}))["accepted"]
    assert check(spec, text, "slur_reclaimed_nh", "women", ScriptedJudge(base | {neg, (text, "This text is about us.")}))["accepted"]
    assert check(spec, text, "slur_reclaimed_nh", "women", ScriptedJudge(base))["accepted"]


def test_a_case_without_target_must_be_about_none_of_the_groups(spec):
    text = "You stupid pencil, you can't even write straight!"
    judge = ScriptedJudge({(text, HATE), (text, "That text is about a non-human material object.")})
    assert check(spec, text, "target_obj_nh", None, judge)["accepted"]
    assert {h for p, h in judge.asked if h.startswith("That example is about")} == {about(t) for t in TARGETS}
    judge.entailed.add((text, about("immigrants")))
    assert check(spec, text, "target_obj_nh", None, judge)["failed_test"] == "NOT identity"


def test_hate_is_expected_per_functionality_and_the_threshold_is_strict(spec):
    text = "Women are disgusting vermin."
    # F7 needs hate; F24 (abuse of a non-protected group) needs it too, F8 and F18 must not have it
    judge = ScriptedJudge({(text, about("women")), (text, "That text contains a slur referring to women.")})
    assert check(spec, text, "slur_h", "women", judge)["failed_test"] == "hate"
    half = ScriptedJudge(p={(text, about("women")): 0.5})  # P(entailment) must exceed the threshold
    assert check(spec, text, "derog_neg_emote_h", "women", half)["failed_test"] == "identity"


def test_each_pair_is_asked_once_over_all_cases(spec):
    text = "Women are scum."
    judge = ScriptedJudge(everything=True)
    cases = [{"text": text, "functionality": f, "target_ident": "women"} for f in ("derog_dehum_h", "slur_h")]
    nli.validate(cases, spec, judge, 0.5, TARGETS)
    assert len(judge.asked) == len(set(judge.asked)) and judge.asked.count((text, about("women"))) == 1


def test_validation_counts_kept_cases_per_functionality_and_target_and_rejects_duplicates(spec):
    texts = ["Women are scum.", "Women are scum.", "Immigrants are scum.", "I hate this stupid chair."]
    cand = pl.DataFrame(
        {
            "id": [f"g{i}" for i in range(4)],
            "text": texts,
            "functionality": ["derog_dehum_h", "derog_dehum_h", "derog_dehum_h", "target_obj_nh"],
            "target_ident": ["women", "women", "immigrants", None],
            "label": ["hateful"] * 3 + ["non-hateful"],
            "language": ["english"] * 4,
            "request": [0] * 4,
            "k": [0, 1, 0, 0],
            "cache_key": ["x"] * 4,
        }
    )
    judge = ScriptedJudge(
        {
            ("Women are scum.", about("women")),
            ("Women are scum.", "That text contains dehumanization."),
            ("Immigrants are scum.", about("immigrants")),
        }
    )
    kept, rejected, report = generate.validate(cand, spec, judge, 0.5, TARGETS)
    assert kept["id"].to_list() == ["g0"] and kept["dataset"].unique().to_list() == ["gpt_hatecheck"]
    reasons = dict(zip(rejected["id"], rejected["failed_test"]))
    assert reasons == {"g1": "duplicate of an earlier message", "g2": "That text contains dehumanization.", "g3": "hate"}
    assert report["judge"] == "scripted test judge" and report["candidates"] == 4 and report["kept"] == 1
    cells = {(r["functionality"], r["target_ident"]): (r["candidates"], r["kept"]) for r in report["per_functionality_target"]}
    assert cells == {("derog_dehum_h", "immigrants"): (1, 0), ("derog_dehum_h", "women"): (2, 1), ("target_obj_nh", "none"): (1, 0)}
    assert {r["target_ident"]: r["kept"] for r in report["per_target"]} == {"immigrants": 0, "women": 1, "none": 0}
