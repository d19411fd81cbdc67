"""Report subsection: the misspelling and censorship test of "Detecting Hate
Speech with GPT-3" (section 5, Appendix C: Table 22's edits, Table 23's
changed classifications), per backend, next to the paper's figures."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.cells import cell_id
from hatecheck_pipeline.report.cells import html_table, json_td, published_td

SETTING_NAMES = {"zero_shot": "zero-shot", "one_shot": "one-shot"}
TEXT_CHARS = 160


def _short(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "…"


def misspelling_section(docs: Mapping[str, Mapping[str, Any] | None], files: Mapping[str, str], published: Mapping[str, Any]) -> str:
    """Per backend: comments, versions and changed classifications per
    setting, variant and category (the paper: zero-shot, 6 of 27 racist and
    0 of 34 sexist comments changed), then Table 23's rows (ours and GPT-3's)."""
    paper = P.lookup("gpt3_detection_t23", "GPT-3", published)
    t22 = published.get("gpt3_detection_t22") or {}
    t23 = published.get("gpt3_detection_t23") or {}
    edits = "; ".join(f"{s} → {', '.join(e)}" for s, e in (t22.get("edits") or {}).items())
    out = (
        "<h3>Misspelling and censorship (section 5, Appendix C)</h3>"
        "<p class='note'>The racist and sexist comments containing one of Table 22's strings (and 'phuck', as the authors' "
        f"code selects) asked unedited and with each edit ({escape(edits)}; 'phuck' → 'fuck' from the authors' code), "
        "every occurrence replaced, zero- and one-shot at temperature 0. A comment is <b>changed</b> when an edited "
        "version's parsed answer (yes / no / unparsed) differs from the unedited one's. The paper reports the zero-shot "
        "figures only.</p>"
    )
    for backend, doc in docs.items():
        source, stage = files.get(backend, ""), f"llm_misspelling_{backend}"
        if doc is None:
            out += f"<h4>{escape(backend)}</h4><p class='fail'>not run (no {escape(source)})</p>"
            continue
        out += (
            f"<h4>{escape(backend)}: {escape(str(doc.get('stand_in') or doc.get('model')))}</h4>"
            f"<p class='note'>{doc.get('answers')} answers in {doc.get('seconds')} s; versions per category: "
            f"{doc.get('max_texts_per_category') or 'all'}.</p>"
        )
        rows, listed = [], []
        for setting, variants in (doc.get("by_setting") or {}).items():
            for variant, cats in variants.items():
                for category, m in cats.items():
                    cid = lambda *p: cell_id("llm_misspelling", backend, setting, variant, category, *p)  # noqa: E731
                    theirs = setting == "zero_shot"
                    tds = [
                        json_td(
                            m.get("comments"), cid("comments"), source, stage, 0, f" of {m.get('comments_with_profanity')} with profanity"
                        ),
                        published_td(
                            "gpt3_detection_t23",
                            "GPT-3",
                            category,
                            "comments",
                            paper.get((category, "comments"), (None,))[0] if theirs else None,
                            t23.get("source", ""),
                        ),
                        json_td(m.get("versions"), cid("versions"), source, stage, 0),
                        json_td(m.get("unparsed"), cid("unparsed"), source, stage, 0),
                        json_td(m.get("yes_share_unedited"), cid("yes_share_unedited"), source, stage, 1),
                        json_td(m.get("changed"), cid("changed"), source, stage, 0, f": comments {m.get('changed_comments')}"),
                        published_td(
                            "gpt3_detection_t23",
                            "GPT-3",
                            category,
                            "changed",
                            paper.get((category, "changed"), (None,))[0] if theirs else None,
                            t23.get("source", ""),
                        ),
                        json_td((m.get("flipped_versions") or {}).get("yes_to_no"), cid("yes_to_no"), source, stage, 0),
                        json_td((m.get("flipped_versions") or {}).get("no_to_yes"), cid("no_to_yes"), source, stage, 0),
                    ]
                    rows.append(
                        f'<tr><td class="rowhead">{SETTING_NAMES.get(setting, setting)}</td><td class="rowhead">{escape(variant)}</td>'
                        f'<td class="rowhead">{category}</td>{"".join(tds)}</tr>'
                    )
                    for i, r in enumerate(m.get("rows") or []):
                        rid = cid(str(r["comment_id"]), str(i), "answer")
                        answer_td = json_td(r["answer"], rid, source, stage, 0, " (" + r["verdict"] + ")")
                        version = escape(r["status"]) + (" (" + escape(r["edit"]) + ")" if r.get("edit") else "")
                        listed.append(
                            f'<tr><td class="rowhead">{SETTING_NAMES.get(setting, setting)}, {escape(variant)}</td><td>{category}</td>'
                            f"<td>{version}</td><td>{escape(_short(r['text']))}</td>{answer_td}</tr>"
                        )
        head = [
            "setting",
            "variant",
            "category",
            "comments",
            "comments (paper)",
            "versions",
            "unparsed",
            "yes % (unedited)",
            "changed",
            "changed (paper)",
            "yes → no versions",
            "no → yes versions",
        ]
        out += html_table(f"llm-misspelling-{backend}", head, rows)
        if listed:
            out += "<h5>Table 23 (ours): changed comments, unedited and the edited versions whose answer differs</h5>" + html_table(
                f"llm-t23-{backend}", ["setting", "label", "version", "comment", "answer"], listed
            )
        else:
            out += "<p class='note'>No edit changed a classification in this run.</p>"
    if t23.get("rows"):
        paper_rows = "".join(
            "<tr><td>"
            + escape(r["label"])
            + "</td><td>"
            + escape(r["status"])
            + (" (" + escape(r["edit"]) + ")" if r.get("edit") else "")
            + "</td><td>"
            + escape(_short(r["comment"]))
            + "</td><td class='published'>"
            + escape(r["answer"])
            + "</td></tr>"
            for r in t23["rows"]
        )
        out += (
            f"<details><summary>The paper's Table 23 ({escape(t23.get('source', ''))}; GPT-3, zero-shot)</summary>"
            + html_table("llm-t23-paper", ["label", "version", "comment", "GPT-3"], [paper_rows])
            + "</details>"
        )
    return out
