"""The REST part of the benchmark (bench/run.sh --rest): `by_pk` (one article by primary key)
as a REST endpoint, `GET /api/rest/articles/<id>`, beside the same query over `/v1/graphql`, in
one run. At each concurrency, with the id varying per request and with one hot id, the two are
measured in turns (after their warm-ups); the figure is REST's requests per second over
GraphQL's. Standard library only."""

BY_PK = "query by_pk($id: Int!) { article_by_pk(id: $id) { id title views } }"


def setup(base, secret, post, log):
    answer = post(f"{base}/v1/query", {"type": "bulk", "args": [
        {"type": "create_query_collection", "args": {"name": "bench", "definition": {"queries": [
            {"name": "by_pk", "query": BY_PK}]}}},
        {"type": "create_rest_endpoint", "args": {"name": "by_pk", "url": "articles/:id", "methods": ["GET"],
                                                  "definition": {"query": {"collection_name": "bench",
                                                                           "query_name": "by_pk"}}}},
    ]}, {"X-Svc-Admin-Secret": secret})
    if not isinstance(answer, list):
        raise SystemExit(f"bench: REST endpoint setup failed: {answer}")
    log("collection `bench` and endpoint `articles/:id` created")


def measure(*, base, wrk, levels, warmup, duration, headers, log):
    rows = []
    for conc in levels:
        for ids in ("varying", "hot"):
            low, high = (1, 100_000) if ids == "varying" else (42, 42)
            var = {"name": "id", "min": low, "max": high}
            graphql = {"text": BY_PK, "var": var}
            rest = {"text": BY_PK, "var": var, "path": "/api/rest/articles/__VALUE__"}
            figures = {}
            for kind, query, url in (("graphql", graphql, f"{base}/v1/graphql"),
                                     ("rest", rest, base)):
                wrk(url, query, conc, warmup, headers)
                figures[kind] = wrk(url, query, conc, duration, headers)
            row = {"concurrency": conc, "ids": ids,
                   "graphql_rps": figures["graphql"]["rps"], "rest_rps": figures["rest"]["rps"],
                   "graphql_p50_us": figures["graphql"]["p50_us"], "rest_p50_us": figures["rest"]["p50_us"],
                   "errors": sum(f["socket_errors"] + f["status_errors"] for f in figures.values())}
            row["rest_cost"] = row["graphql_rps"] / row["rest_rps"]
            rows.append(row)
            log(f"concurrency {conc}, {ids} ids: REST costs {row['rest_cost']:.3f}x GraphQL")
    return rows


def table(rows):
    lines = ["| concurrency | ids | GraphQL req/s | REST req/s | REST cost | GraphQL p50 | REST p50 | errors |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['concurrency']} | {r['ids']} | {r['graphql_rps']:,.0f} | {r['rest_rps']:,.0f} | "
                     f"{r['rest_cost']:.3f}x | {r['graphql_p50_us'] / 1000:.2f} ms | "
                     f"{r['rest_p50_us'] / 1000:.2f} ms | {r['errors']} |")
    return "\n".join(lines)
