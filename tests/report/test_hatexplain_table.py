"""The report's HateXplain table (the paper's Table 6 layout): bias columns
from a paired 2-class model, each row's 3-class figures in labelled extra
columns, BERT-HateXplain's row next to the paper's."""

from __future__ import annotations

from hatecheck_pipeline.report.sections import hatexplain_table6

EXPLAINED = [
    {
        "method": "attention",
        "paper_row": "BERT [Attn]",
        "top_k": 5,
        "iou_f1": 0.2,
        "token_f1": 0.4,
        "auprc": 0.6,
        "comprehensiveness": 0.1,
        "sufficiency": 0.0,
        "n_posts": 1142,
    }
]
BIAS3 = {"gmb_subgroup_3class": 0.61, "gmb_bpsn_3class": 0.62, "gmb_bnsp_3class": 0.63}
HX = {
    "hatexplain": {
        "model": "hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base)",
        "accuracy": 0.6,
        "macro_f1": 0.5,
        "auroc": 0.8,
        "gmb_subgroup": 0.71,
        "gmb_bpsn": 0.72,
        "gmb_bnsp": 0.73,
        "bias_classes": 2,
        "bias_model": "hatexplain-2class",
        **BIAS3,
        "explanations": EXPLAINED,
    },
    "hatexplain-supervised": {
        "model": "hatexplain-supervised (all-MiniLM-L6-v2)",
        "accuracy": 0.6,
        "macro_f1": 0.5,
        "auroc": 0.8,
        "gmb_subgroup": 0.65,
        "gmb_bpsn": 0.66,
        "gmb_bnsp": 0.67,
        "bias_classes": 3,
        "gmb_subgroup_3class": 0.65,
        "gmb_bpsn_3class": 0.66,
        "gmb_bnsp_3class": 0.67,
        "explanations": [{**EXPLAINED[0], "paper_row": "BERT-HateXplain [Attn]"}],
    },
}
PUBLISHED = {
    "hatexplain_t6": {
        "source": "paper",
        "values": {"BERT": {"Attn": {"gmb_subgroup": 0.762}}, "BERT-HateXplain": {"Attn": {"gmb_subgroup": 0.807}}},
    }
}


def test_bias_columns_come_from_the_two_class_model_and_the_three_class_figures_are_labelled():
    html = hatexplain_table6(HX, {"model": "hatexplain-supervised", "ran": True}, "summary.json", PUBLISHED)
    assert "GMB-Sub. (3-class)" in html and "did not run" not in html
    rows = html.split("<tr>")
    bert = next(r for r in rows if "hatexplain (all-MiniLM" in r)
    assert 'data-cell-id="bias:hatexplain:hatexplain:gmb_subgroup"' in bert and ">0.710<" in bert and ">0.610<" in bert
    assert "2-class model hatexplain-2class" in bert
    sup = next(r for r in rows if "hatexplain-supervised (all-MiniLM" in r)
    # no 2-class model paired: the paper's bias columns stay empty, the 3-class figure is in its own columns
    assert 'data-cell-id="bias:hatexplain:hatexplain-supervised:gmb_subgroup"' not in sup and sup.count("no 2-class model") == 3
    assert 'data-cell-id="bias:hatexplain:hatexplain-supervised:gmb_subgroup_3class"' in sup and ">0.650<" in sup
    nxt = rows[rows.index(sup) + 1]
    assert "paper: BERT-HateXplain [Attn]" in nxt and ">0.807<" in nxt


def test_a_supervised_model_that_did_not_run_keeps_its_row():
    html = hatexplain_table6(
        {"hatexplain": HX["hatexplain"]},
        {"model": "hatexplain-supervised", "ran": False, "reason": "no rationales"},
        "summary.json",
        PUBLISHED,
    )
    assert "did not run: no rationales" in html and "paper: BERT-HateXplain [Attn]" in html


def test_bert_hatexplain_trained_on_the_eraser_union_says_its_target_is_not_the_papers_mean():
    on_eraser = hatexplain_table6(
        HX, {"model": "hatexplain-supervised", "ran": True, "train_rationales": "eraser"}, "summary.json", PUBLISHED
    )
    rows = on_eraser.split("<tr>")
    sup = next(r for r in rows if "hatexplain-supervised (all-MiniLM" in r)
    bert = next(r for r in rows if "hatexplain (all-MiniLM" in r)
    assert "union of the annotators' rationales" in sup and "union" not in bert
    assert "supervision target" in on_eraser.split("</table>")[-1]
    # per-annotator masks of one's own: the target is their mean, as the paper's, and nothing is flagged
    own = hatexplain_table6(
        HX, {"model": "hatexplain-supervised", "ran": True, "train_rationales": "masks.json"}, "summary.json", PUBLISHED
    )
    assert "union" not in own


def test_lime_rows_sit_beside_the_papers_lime_rows_and_integrated_gradients_has_none():
    lime = {
        **EXPLAINED[0],
        "method": "lime",
        "paper_row": "BERT [LIME]",
        "n_posts": 60,
        "n_posts_available": 1142,
        "method_label": "LIME (lime 0.2.0.1 LimeTextExplainer, 100 samples)",
    }
    ig = {**EXPLAINED[0], "method": "integrated_gradients", "paper_row": None, "n_posts": 60}
    hx = {"hatexplain": {**HX["hatexplain"], "explanations": [EXPLAINED[0], lime, ig]}}
    pub = {"hatexplain_t6": {"source": "paper", "values": {"BERT": {"Attn": {"token_f1": 0.497}, "LIME": {"sufficiency": 0.008}}}}}
    html = hatexplain_table6(hx, None, "summary.json", pub)
    rows = html.split("<tr>")
    heads = [r.split("</td>")[0] for r in rows if r.startswith('<td class="rowhead')]
    assert [h.rsplit(">", 1)[-1] for h in heads] == [
        "hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base) [Attn]",
        "paper: BERT [Attn] (bert-base-uncased, full data)",
        "hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base) [LIME]",
        "paper: BERT [LIME] (bert-base-uncased, full data)",
        "hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base) [integrated gradients]",
    ]
    ours = next(r for r in rows if "[LIME]</td>" in r and "paper:" not in r)
    assert 'data-cell-id="bias:hatexplain:hatexplain:lime:token_f1"' in ours and "100 samples" in ours and "60 of 1142" in ours
    assert 'data-cell-id="published:hatexplain_t6:BERT:LIME:sufficiency"' in rows[rows.index(ours) + 1]
