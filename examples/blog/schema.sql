-- The database the example resources describe. Run it once before applying them:
--   psql "$DATABASE_URL" -f examples/blog/schema.sql
CREATE TABLE author (
  id serial PRIMARY KEY,
  name text NOT NULL,
  bio text
);

CREATE TABLE article (
  id serial PRIMARY KEY,
  author_id integer NOT NULL REFERENCES author (id),
  title text NOT NULL,
  body text NOT NULL DEFAULT '',
  published boolean NOT NULL DEFAULT false
);
CREATE INDEX article_author_id ON article (author_id);

CREATE TABLE comment (
  id serial PRIMARY KEY,
  article_id integer NOT NULL REFERENCES article (id),
  author_id integer NOT NULL REFERENCES author (id),
  body text NOT NULL
);
CREATE INDEX comment_article_id ON comment (article_id);

-- Backs the `fullName` computed field of author.
CREATE FUNCTION author_full_name(a author) RETURNS text LANGUAGE sql STABLE
  AS $$ SELECT a.name || coalesce(' (' || a.bio || ')', '') $$;

-- Backs the `search_articles` root field (a TrackedFunction): articles whose title or body
-- mention the term, read under each role's select permission on article.
CREATE FUNCTION search_articles(term text) RETURNS SETOF article LANGUAGE sql STABLE
  AS $$ SELECT * FROM article WHERE title ILIKE '%' || term || '%' OR body ILIKE '%' || term || '%' $$;
