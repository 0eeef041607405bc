-- insert_one: insert one comment, returning its id. Written by hand (explain covers queries
-- only) after the statements Basalt runs for insert_comment_one as admin, in one transaction:
-- the session setting, the INSERT returning the row's ctid, the answer built from that row.
\set a random(1, 100000)
BEGIN;
SELECT set_config('basalt.user', '{"x-svc-role":"admin"}', true);
INSERT INTO "public"."comment" AS _t1 ("article_id", "author_id", "body") VALUES (:a::integer, '1'::integer, 'bench'::text) RETURNING _t1.ctid::text AS row_ctid \gset
SELECT json_build_object('id', _t1."id") FROM "public"."comment" AS _t1 WHERE _t1.ctid = ANY(ARRAY[:row_ctid]::tid[]);
COMMIT;
