-- plain_updates: written by hand (explain covers queries only): the same rows written in one statement,
-- and the same answer.
\set a random(1, 10000)
WITH a AS (UPDATE author SET name = 'bench' WHERE id = :a RETURNING id), b AS (UPDATE article SET views = views + 1 WHERE author_id = :a RETURNING id) SELECT json_build_object('update_author_by_pk', (SELECT json_build_object('id', id) FROM a), 'update_article_many', (SELECT json_agg(json_build_object('affected_rows', 1)) FROM b));
