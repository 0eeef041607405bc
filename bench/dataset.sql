-- The benchmark dataset: deterministic (no random()), so every run and every target sees the
-- same rows. 10 000 authors, 100 000 articles, 500 000 comments; every foreign key indexed.
CREATE TABLE author (
  id integer PRIMARY KEY,
  name text NOT NULL,
  email text NOT NULL
);
CREATE TABLE article (
  id integer PRIMARY KEY,
  author_id integer NOT NULL REFERENCES author (id),
  title text NOT NULL,
  category integer NOT NULL,
  status text NOT NULL,
  views integer NOT NULL
);
CREATE TABLE comment (
  id serial PRIMARY KEY,
  article_id integer NOT NULL REFERENCES article (id),
  author_id integer NOT NULL REFERENCES author (id),
  body text NOT NULL
);

INSERT INTO author
SELECT i, 'author ' || i, 'author' || i || '@example.com'
FROM generate_series(1, 10000) AS i;

INSERT INTO article
SELECT i,
       (i::bigint * 7919) % 10000 + 1,
       'article ' || i,
       i % 20 + 1,
       CASE WHEN i % 3 = 0 THEN 'draft' ELSE 'published' END,
       (i::bigint * 104729) % 5000
FROM generate_series(1, 100000) AS i;

INSERT INTO comment (article_id, author_id, body)
SELECT (i::bigint * 48271) % 100000 + 1, (i::bigint * 16807) % 10000 + 1, 'comment ' || i
FROM generate_series(1, 500000) AS i;

CREATE INDEX article_author_id ON article (author_id);
CREATE INDEX article_category_status ON article (category, status, id);
CREATE INDEX comment_article_id ON comment (article_id);
CREATE INDEX comment_author_id ON comment (author_id);
-- The tracked function of the search_fn query: the articles of one category. A STABLE SQL
-- function Postgres inlines into the statement that calls it.
CREATE FUNCTION articles_in_category(c integer) RETURNS SETOF article LANGUAGE sql STABLE
  AS $$ SELECT * FROM article WHERE category = c $$;
ANALYZE;
