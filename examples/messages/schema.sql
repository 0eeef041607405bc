-- The messages example: user profiles, each pointing at a message held by the messages
-- service (a separate GraphQL server).
CREATE TABLE profiles (
  id serial PRIMARY KEY,
  name text NOT NULL,
  msg_id integer
);

INSERT INTO profiles (name, msg_id) VALUES
  ('alice', 1), ('bob', 2), ('alice', 3), ('dave', NULL);
