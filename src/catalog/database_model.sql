-- The database model: everything metadata can refer to, in one round trip, as one JSON
-- document deserialized into `db_model::DbModel`.
--
-- Relations: ordinary, partitioned, foreign tables, views and materialized views outside the
-- system schemas and basalt_catalog. For each: columns in attnum order (type, nullability,
-- default, generated/identity), primary key, unique and foreign-key constraints (column lists in
-- key order), and whether Postgres can insert/update/delete through it
-- (pg_relation_is_updatable bits: 8 insert, 4 update, 16 delete).
-- Functions: plain functions (not procedures or aggregates) with argument names, modes and
-- types, return type, set-returning flag and volatility.
-- Scalar types: names of base, enum, domain and range types, for custom-type validation.
WITH rels AS (
  SELECT c.oid, n.nspname AS schema, c.relname AS name, c.relkind, c.relrowsecurity,
         obj_description(c.oid, 'pg_class') AS comment
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'f', 'v', 'm')
    AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'basalt_catalog')
    AND n.nspname NOT LIKE 'pg\_toast%'
    AND n.nspname NOT LIKE 'pg\_temp\_%'
),
cols AS (
  SELECT a.attrelid,
         json_agg(json_build_object(
           'name', a.attname,
           'attnum', a.attnum,
           'data_type', format_type(a.atttypid, a.atttypmod),
           'type_name', t.typname,
           'type_schema', tn.nspname,
           'type_kind', t.typtype,
           'element_type', et.typname,
           'nullable', NOT a.attnotnull,
           'default', pg_get_expr(d.adbin, d.adrelid),
           'generated', a.attgenerated <> '',
           'identity', a.attidentity <> '',
           'comment', col_description(a.attrelid, a.attnum)
         ) ORDER BY a.attnum) AS columns
  FROM pg_catalog.pg_attribute a
  JOIN rels r ON r.oid = a.attrelid
  JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
  JOIN pg_catalog.pg_namespace tn ON tn.oid = t.typnamespace
  LEFT JOIN pg_catalog.pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
  LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE a.attnum > 0 AND NOT a.attisdropped
  GROUP BY a.attrelid
),
cons AS (
  SELECT con.conrelid,
         json_agg(json_build_object(
           'name', con.conname,
           'kind', con.contype,
           'columns', (SELECT json_agg(att.attname ORDER BY k.ord)
                       FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
                       JOIN pg_catalog.pg_attribute att
                         ON att.attrelid = con.conrelid AND att.attnum = k.attnum),
           'ref_schema', fn.nspname,
           'ref_table', fc.relname,
           'ref_columns', (SELECT json_agg(att.attname ORDER BY k.ord)
                           FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
                           JOIN pg_catalog.pg_attribute att
                             ON att.attrelid = con.confrelid AND att.attnum = k.attnum)
         ) ORDER BY con.conname) AS constraints
  FROM pg_catalog.pg_constraint con
  JOIN rels r ON r.oid = con.conrelid
  LEFT JOIN pg_catalog.pg_class fc ON fc.oid = con.confrelid
  LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
  WHERE con.contype IN ('p', 'u', 'f')
  GROUP BY con.conrelid
),
funcs AS (
  SELECT p.oid, n.nspname AS schema, p.proname AS name,
         COALESCE(to_json(p.proargnames), '[]'::json) AS arg_names,
         COALESCE(to_json(p.proargmodes::text[]), 'null'::json) AS arg_modes,
         COALESCE((SELECT json_agg(json_build_object(
                     'schema', tn.nspname, 'name', t.typname, 'kind', t.typtype,
                     'formatted', format_type(t.oid, NULL), 'element', et.typname,
                     'relation_schema', rn.nspname, 'relation', rc.relname) ORDER BY a.ord)
                   FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(typ, ord)
                   JOIN pg_catalog.pg_type t ON t.oid = a.typ
                   JOIN pg_catalog.pg_namespace tn ON tn.oid = t.typnamespace
                   LEFT JOIN pg_catalog.pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
                   LEFT JOIN pg_catalog.pg_class rc ON rc.oid = t.typrelid
                   LEFT JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace),
                  '[]'::json) AS input_types,
         json_build_object('schema', rtn.nspname, 'name', rt.typname, 'kind', rt.typtype,
                           'relation_schema', rrn.nspname, 'relation', rrc.relname) AS return_type,
         p.proretset AS returns_set,
         p.pronargdefaults AS arg_defaults,
         p.provolatile AS volatility,
         obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
  JOIN pg_catalog.pg_type rt ON rt.oid = p.prorettype
  JOIN pg_catalog.pg_namespace rtn ON rtn.oid = rt.typnamespace
  LEFT JOIN pg_catalog.pg_class rrc ON rrc.oid = rt.typrelid
  LEFT JOIN pg_catalog.pg_namespace rrn ON rrn.oid = rrc.relnamespace
  WHERE p.prokind = 'f'
    AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'basalt_catalog')
    AND n.nspname NOT LIKE 'pg\_toast%'
    AND n.nspname NOT LIKE 'pg\_temp\_%'
)
SELECT json_build_object(
  'tables', COALESCE((
    SELECT json_agg(json_build_object(
             'oid', r.oid::bigint,
             'schema', r.schema,
             'name', r.name,
             'kind', r.relkind,
             'comment', r.comment,
             'columns', COALESCE(c.columns, '[]'::json),
             'constraints', COALESCE(k.constraints, '[]'::json),
             'updatable_bits', pg_relation_is_updatable(r.oid::regclass, false),
             'row_security', r.relrowsecurity,
             'parents', COALESCE((SELECT json_agg(i.inhparent::bigint ORDER BY i.inhseqno)
                                  FROM pg_catalog.pg_inherits i WHERE i.inhrelid = r.oid),
                                 '[]'::json),
             'reads', CASE WHEN r.relkind = 'v' THEN (
               -- What the view's query reads and calls, from its rewrite rule's query tree
               -- (pg_depend leaves out built-in objects such as now()): the relations of its
               -- range table, and whether a function it calls (directly, through an
               -- operator, aggregate or window) is not IMMUTABLE, or it uses a
               -- CURRENT_TIMESTAMP-like value or a sequence's next value.
               SELECT json_build_object(
                 'relations', COALESCE((
                   SELECT json_agg(DISTINCT m[1]::bigint)
                   FROM regexp_matches(rw.ev_action::text, ':relid (\d+)', 'g') AS m
                   WHERE m[1]::oid NOT IN (r.oid, 0)), '[]'::json),
                 'volatile', rw.ev_action::text ~ '\{(SQLVALUEFUNCTION|NEXTVALUEEXPR) '
                   OR EXISTS (
                     SELECT 1
                     FROM regexp_matches(rw.ev_action::text,
                            ':(?:funcid|opfuncid|aggfnoid|winfnoid) (\d+)', 'g') AS f
                     JOIN pg_catalog.pg_proc p ON p.oid = f[1]::oid
                     WHERE p.provolatile <> 'i'))
               FROM pg_catalog.pg_rewrite rw
               WHERE rw.ev_class = r.oid AND rw.rulename = '_RETURN') END
           ) ORDER BY r.schema, r.name)
    FROM rels r
    LEFT JOIN cols c ON c.attrelid = r.oid
    LEFT JOIN cons k ON k.conrelid = r.oid), '[]'::json),
  'functions', COALESCE((
    SELECT json_agg(json_build_object(
             'oid', f.oid::bigint, 'schema', f.schema, 'name', f.name,
             'arg_names', f.arg_names, 'arg_modes', f.arg_modes,
             'input_types', f.input_types, 'return_type', f.return_type,
             'returns_set', f.returns_set, 'arg_defaults', f.arg_defaults,
             'volatility', f.volatility,
             'comment', f.comment
           ) ORDER BY f.schema, f.name, f.oid)
    FROM funcs f), '[]'::json),
  'scalar_types', COALESCE((
    SELECT json_agg(DISTINCT t.typname)
    FROM pg_catalog.pg_type t
    WHERE t.typtype IN ('b', 'e', 'd', 'r') AND t.typname NOT LIKE '\_%'), '[]'::json),
  'capture_triggers', COALESCE((
    SELECT json_agg(json_build_object(
             'name', tg.tgname, 'schema', tn.nspname, 'table', tc.relname,
             'hash', pg_catalog.obj_description(tg.tgfoid, 'pg_proc')
           ) ORDER BY tg.tgname, tn.nspname, tc.relname)
    FROM pg_catalog.pg_trigger tg
    JOIN pg_catalog.pg_class tc ON tc.oid = tg.tgrelid
    JOIN pg_catalog.pg_namespace tn ON tn.oid = tc.relnamespace
    WHERE NOT tg.tgisinternal AND tg.tgname LIKE 'notify\_basalt\_%'), '[]'::json),
  'capture_functions', COALESCE((
    SELECT json_agg(p.proname ORDER BY p.proname)
    FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace
    -- Capture functions are `notify_basalt_<trigger>_<OP>`; the live-query change function
    -- has the same prefix and is not one of them.
    WHERE pn.nspname = 'basalt_catalog' AND p.proname LIKE 'notify\_basalt\_%'
      AND p.proname <> 'notify_basalt_live_change'), '[]'::json),
  'live', json_build_object(
    'function', EXISTS (
      SELECT 1 FROM pg_catalog.pg_proc p
      JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace
      WHERE pn.nspname = 'basalt_catalog' AND p.proname = 'notify_basalt_live_change'),
    'action_log', to_regclass('basalt_catalog.action_log')::oid::bigint,
    'triggers', COALESCE((
      SELECT json_object_agg(tg.tgrelid::bigint, tg.tgenabled::text)
      FROM pg_catalog.pg_trigger tg WHERE tg.tgname = 'basalt_live_change'), '{}'::json))
) AS model
