"""Extraction-quality metrics, one definition for ``bench`` (``make quality``) and ``train``
(calibration, the model card): WCXB's word P/R/F1, ROUGE-5 and snippet checks.

Metrics, per page, then the plain mean over pages (as WCXB's ``evaluate.py``); micro totals
(sums of overlaps and token counts over all pages) go to the JSON as well.

- Tokens: WCXB's, lowercase ``\\w+`` runs (``eval.labels.words``).
- Word P/R/F1 (WCXB's ``word_f1``): overlap = size of the multiset intersection of the two
  token lists (a word repeated k times in both counts min of the two counts);
  P = overlap / #pred tokens, R = overlap / #ref tokens, F1 = 2PR / (P + R), 0 when P + R = 0.
  Reference without tokens: (1, 1, 1) when the prediction has none either, else (0, 0, 0).
  Prediction without tokens (reference has some): (0, 0, 0). A page with no prediction at all
  (missing id, failed extraction) is scored as the empty string.
- ROUGE-N (N = 5): the same formulas over the multisets of N-grams of consecutive tokens.
  Short texts: when the reference has fewer than N tokens (but some), N is lowered to the
  reference's token count for that page, so a 3-word reference is scored on 3-grams (an exact
  extraction scores 1). The empty cases are those of the word metric (both empty: 1; one
  empty: 0); a prediction shorter than the (lowered) N has no N-grams and scores 0.
- empty: pages where the system's text has no token while the reference has some. For ours
  (and the rule rows), ``empty, blocks kept`` counts those of them where simplify kept blocks
  (the result has labels), the acceptance criterion being that it stays 0.
- with / w/o (WCXB's snippet check, only pages with snippets): mean fraction of the ``with``
  snippets found in the text (higher is better) and of the ``without`` ones (lower is better).
  WCXB looks for lowercase raw substrings; its snippets have straight quotes and spaced-out
  code (``f ( x )``) where pages have typographic quotes and ``f(x)``, so here a snippet is
  found when its token sequence occurs contiguously in the text's tokens (a snippet without
  tokens counts as not found).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

ROUGE_N = 5
WORD_RE = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """WCXB's tokens: lowercase ``\\w+`` runs."""
    return WORD_RE.findall(text.lower())


def _prf(overlap: int, n_pred: int, n_ref: int) -> tuple[float, float, float]:
    """P/R/F1 from counts, with WCXB's conventions for empty sides."""
    if n_ref == 0:
        return (1.0, 1.0, 1.0) if n_pred == 0 else (0.0, 0.0, 0.0)
    if n_pred == 0:
        return (0.0, 0.0, 0.0)
    p, r = overlap / n_pred, overlap / n_ref
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def _overlap(pred: Iterable, ref: Iterable) -> tuple[int, int, int]:
    """(multiset overlap, #pred, #ref) of two sequences of hashable items."""
    pred_counts, ref_counts = Counter(pred), Counter(ref)
    overlap = sum((pred_counts & ref_counts).values())
    return overlap, sum(pred_counts.values()), sum(ref_counts.values())


def word_counts(pred: str, ref: str) -> tuple[int, int, int]:
    """(overlapping tokens, prediction tokens, reference tokens)."""
    return _overlap(words(pred), words(ref))


def word_prf(pred: str, ref: str) -> tuple[float, float, float]:
    """WCXB's word precision, recall and F1 of ``pred`` against ``ref``."""
    return _prf(*word_counts(pred, ref))


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def rouge_counts(pred: str, ref: str, n: int = ROUGE_N) -> tuple[int, int, int]:
    """(overlapping n-grams, prediction n-grams, reference n-grams); n lowered to the
    reference's token count when the reference is shorter (see the module docstring)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, not {n}")
    pred_tokens, ref_tokens = words(pred), words(ref)
    if not ref_tokens:  # counts only decide which empty case applies
        return 0, len(pred_tokens), 0
    n = min(n, len(ref_tokens))
    return _overlap(_ngrams(pred_tokens, n), _ngrams(ref_tokens, n))


def rouge_n(pred: str, ref: str, n: int = ROUGE_N) -> tuple[float, float, float]:
    """ROUGE-N precision, recall and F1 over word tokens (multisets of n-grams)."""
    return _prf(*rouge_counts(pred, ref, n))


def snippet_rate(text: str, snippets: Sequence[str]) -> float | None:
    """Fraction of ``snippets`` whose token sequence occurs contiguously in ``text``'s tokens;
    None without snippets (see the module docstring for why tokens, not raw substrings)."""
    if not snippets:
        return None
    haystack = f" {' '.join(words(text))} "
    found = 0
    for snippet in snippets:
        tokens = words(snippet)
        found += bool(tokens) and f" {' '.join(tokens)} " in haystack
    return found / len(snippets)


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def score_pages(texts: Mapping[str, str], references: Mapping[str, str],
                snippets: Mapping[str, dict | None] | None = None,
                per_page: bool = False) -> dict[str, Any]:
    """Scores of ``texts`` against ``references`` (both keyed by page id).

    Every page of ``references`` is scored; one missing from ``texts`` counts as empty.
    Returns ``pages``, the means ``precision``/``recall``/``f1``/``rouge5_p``/``rouge5_r``/
    ``rouge5_f1``, ``empty`` (no token while the reference has some), ``micro`` (the same
    metrics from summed counts), ``with_rate``/``without_rate`` when ``snippets`` is given,
    and ``per_page`` when asked.
    """
    rows: dict[str, dict[str, Any]] = {}
    sums = [0] * 6
    for page_id, ref in references.items():
        text = texts.get(page_id) or ""
        wc, rc = word_counts(text, ref), rouge_counts(text, ref)
        p, r, f1 = _prf(*wc)
        rp, rr, rf = _prf(*rc)
        for i, v in enumerate((*wc, *rc)):
            sums[i] += v
        row = {"precision": p, "recall": r, "f1": f1, "rouge5_p": rp, "rouge5_r": rr,
               "rouge5_f1": rf, "pred_words": wc[1], "ref_words": wc[2],
               "empty": wc[1] == 0 and wc[2] > 0}
        page_snippets = (snippets or {}).get(page_id) or {}
        if snippets is not None:
            row["with_rate"] = snippet_rate(text, page_snippets.get("with") or [])
            row["without_rate"] = snippet_rate(text, page_snippets.get("without") or [])
        rows[page_id] = row
    keys = ("precision", "recall", "f1", "rouge5_p", "rouge5_r", "rouge5_f1")
    result: dict[str, Any] = {"pages": len(rows)}
    for key in keys:
        result[key] = _mean(row[key] for row in rows.values())
    result["empty"] = sum(row["empty"] for row in rows.values())
    wp, wr, wf = _prf(*sums[:3])
    rp, rr, rf = _prf(*sums[3:])
    result["micro"] = {"precision": wp, "recall": wr, "f1": wf, "rouge5_p": rp,
                       "rouge5_r": rr, "rouge5_f1": rf, "overlap_words": sums[0],
                       "pred_words": sums[1], "ref_words": sums[2]}
    if snippets is not None:
        result["with_rate"] = _mean(row["with_rate"] for row in rows.values())
        result["without_rate"] = _mean(row["without_rate"] for row in rows.values())
    if per_page:
        result["per_page"] = rows
    return result
