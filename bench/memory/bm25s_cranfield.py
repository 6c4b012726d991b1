#!/usr/bin/env python3
"""Cranfield 1400 with bm25s (method="lucene"), tokenized exactly like the Rust
`cranfield` example and the data set's README: lowercase [a-z0-9]+ runs, Lucene's 33
English stop words removed, no stemming, query terms deduplicated.

Usage: python bm25s_cranfield.py [path/to/cranfield]
Prints a table and one `BENCH_JSON {...}` line, like examples/cranfield.rs.
"""

import json
import math
import os
import re
import sys
import time

import bm25s
import numpy as np

STOP_WORDS = set(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
LUCENE = [(1.2, 0.75, 0.3442, 0.6980, 0.2762), (0.9, 0.4, 0.3286, 0.6878, 0.2638)]
MAP_DEPTH = 1000


def tokenize(text):
    return [t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in STOP_WORDS]


def dedup(tokens):
    seen, out = set(), []
    for t in tokens:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def parse_smart(text, fields):
    """SMART format: `.I id` starts a record, `.X` switches field; wanted fields joined."""
    records, keep = [], False
    for line in text.splitlines():
        if line.startswith(".I"):
            records.append([int(line[2:].strip() or len(records) + 1), ""])
            keep = False
        elif len(line) >= 2 and line[0] == "." and line[1:].isalpha() and line[1:].isupper():
            keep = line[1:] in fields
        elif keep and records:
            records[-1][1] += line + "\n"
    return records


def parse_qrels(text, n_queries):
    gains = [dict() for _ in range(n_queries)]
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        q, doc, code = (int(p) for p in parts)
        if 1 <= q <= n_queries:
            gains[q - 1][doc] = float(5 - code) if 1 <= code <= 4 else 0.0
    return gains


def ndcg_at(ranking, gains, k):
    dcg = sum(gains.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranking, gains, k):
    rel = sum(1 for g in gains.values() if g > 0)
    return sum(1 for d in ranking[:k] if gains.get(d, 0) > 0) / rel if rel else 0.0


def average_precision(ranking, gains):
    rel = sum(1 for g in gains.values() if g > 0)
    hits, total = 0, 0.0
    for i, d in enumerate(ranking):
        if gains.get(d, 0) > 0:
            hits += 1
            total += hits / (i + 1)
    return total / rel if rel else 0.0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "..", "..", "..", "shared", "data", "cranfield")
    path = sys.argv[1] if len(sys.argv) > 1 else default
    read = lambda name: open(os.path.join(path, name), encoding="utf-8", errors="replace").read()
    docs = parse_smart(read("cran.all.1400"), {"T", "W"})
    queries = parse_smart(read("cran.qry"), {"W"})
    gains = parse_qrels(read("cranqrel"), len(queries))
    doc_ids = [d[0] for d in docs]
    corpus_tokens = [tokenize(d[1]) for d in docs]
    query_tokens = [dedup(tokenize(q[1])) for q in queries]

    print(f"Cranfield with bm25s {bm25s.__version__}: {len(docs)} documents, {len(queries)} queries")
    print("| k1, b | nDCG@10 | Lucene | Δ | Recall@100 | Lucene | MAP | Lucene | queries/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    runs = []
    for k1, b, l_ndcg, l_recall, l_map in LUCENE:
        started = time.perf_counter()
        retriever = bm25s.BM25(method="lucene", k1=k1, b=b)
        retriever.index(corpus_tokens, show_progress=False)
        index_ms = (time.perf_counter() - started) * 1e3
        results, _ = retriever.retrieve(query_tokens, k=MAP_DEPTH, show_progress=False, n_threads=1)
        ndcg = recall = ap = 0.0
        for q, row in enumerate(results):
            ranking = [doc_ids[int(i)] for i in row]
            ndcg += ndcg_at(ranking, gains[q], 10)
            recall += recall_at(ranking, gains[q], 100)
            ap += average_precision(ranking, gains[q])
        n = len(queries)
        ndcg, recall, ap = ndcg / n, recall / n, ap / n
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            retriever.retrieve(query_tokens, k=10, show_progress=False, n_threads=1)
            best = min(best, time.perf_counter() - started)
        qps = n / best
        print(f"| {k1}, {b} | {ndcg:.4f} | {l_ndcg:.4f} | {ndcg - l_ndcg:+.4f} | {recall:.4f} | {l_recall:.4f} | {ap:.4f} | {l_map:.4f} | {qps:.0f} |")
        runs.append(dict(k1=k1, b=b, ndcg10=round(ndcg, 6), recall100=round(recall, 6), map=round(ap, 6),
                         lucene_ndcg10=l_ndcg, lucene_recall100=l_recall, lucene_map=l_map,
                         qps=round(qps, 1), index_ms=round(index_ms, 3)))
    line = dict(bench="cranfield", engine="bm25s", version=bm25s.__version__, target="python",
                docs=len(docs), queries=len(queries), runs=runs)
    print("BENCH_JSON " + json.dumps(line, separators=(",", ":")))


if __name__ == "__main__":
    np.random.seed(0)
    main()
