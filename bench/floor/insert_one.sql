-- insert_one: insert one comment, returning its id. Written by hand (explain covers queries
-- only) after the one statement Basalt runs for insert_comment_one as admin: the session set
-- by the insert's gate, the row written, the answer built from the written row.
\set a random(1, 100000)
WITH "_written" AS (INSERT INTO "public"."comment" AS _t1 ("article_id", "author_id", "body") SELECT * FROM (VALUES (:a::integer, '1'::integer, 'bench'::text)) AS _values WHERE (SELECT set_config('basalt.user', '{"x-svc-role":"admin"}', true)) IS NOT NULL RETURNING _t1.*) SELECT (SELECT json_build_object('id', _t2."id") FROM "_written" AS _t2 LIMIT 1);
