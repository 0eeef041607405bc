//! IR → SQL: one statement per query operation whose single `json` column is the whole `data`
//! object. Values are numbered parameters sent as text and cast (`$3::integer`); identifiers
//! are quoted; table aliases come from a counter, so the SQL of a plan is deterministic. Pure.

use crate::graphql::ir::*;
use crate::metadata::types::QualifiedTable;
use crate::schema::RelationshipKind;
use crate::sql::{quote_ident, quote_qualified};
use serde_json::Value;

/// How a parameter's value is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Strings as they are, numbers and booleans printed.
    Text,
    /// Always JSON text (for `json`/`jsonb` casts).
    Json,
    /// A Postgres array literal (`{a,"b c"}`) from a JSON array; strings pass unchanged.
    PgArray,
}

/// A numbered parameter: where its value comes from and how it is encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundParam {
    /// Source.
    pub source: Param,
    /// Encoding.
    pub encoding: Encoding,
}

/// SQL text with its parameters (`$1` is `params[0]`).
#[derive(Debug, Clone, PartialEq)]
pub struct SqlText {
    /// The statement.
    pub sql: String,
    /// Parameters in order.
    pub params: Vec<BoundParam>,
}

/// Compiles a query plan. `$1` is always the session JSON for `basalt.user`.
pub fn query(plan: &QueryPlan) -> SqlText {
    let mut b = Builder::new();
    b.params.push(BoundParam {
        source: Param::SessionObject,
        encoding: Encoding::Json,
    });
    b.push("SELECT ");
    let pairs: Vec<(String, RootField)> = plan.fields.clone();
    b.object(pairs.len(), |b, i| {
        let (key, field) = &pairs[i];
        b.literal(key);
        b.push(", ");
        match field {
            RootField::Select(select) => b.select(select, None),
            RootField::Aggregate(aggregate) => b.aggregate(aggregate, None),
            RootField::Constant(Value::String(s)) => {
                b.literal(s);
                b.push("::text");
            }
            RootField::Constant(_) => b.push("NULL::json"),
        }
    });
    b.push(" AS data FROM (SELECT set_config('basalt.user', $1, true)) AS _session");
    SqlText {
        sql: b.sql,
        params: b.params,
    }
}

pub(crate) struct Builder {
    sql: String,
    params: Vec<BoundParam>,
    aliases: usize,
    /// Aliases naming a paged subquery of a table rather than the table itself, with that
    /// table: a whole-row reference to them is cast back to the table's type.
    paged: Vec<(String, QualifiedTable)>,
}

mod mutation;
pub use mutation::{
    check, delete, insert, insert_view, response, update, update_view, InsertStatement,
};

/// Most key/value pairs in one `json_build_object` call (Postgres allows 100 arguments).
const MAX_PAIRS: usize = 50;

/// Whether `f` is one of the aggregate functions the schema offers (safe to print as SQL).
fn is_aggregate_function(f: &str) -> bool {
    f == "max" || f == "min" || crate::graphql::model::NUMERIC_AGGREGATES.contains(&f)
}

impl Builder {
    fn new() -> Self {
        Builder {
            sql: String::new(),
            params: Vec::new(),
            aliases: 0,
            paged: Vec::new(),
        }
    }

    fn finish(self) -> SqlText {
        SqlText {
            sql: self.sql,
            params: self.params,
        }
    }

    fn push(&mut self, s: &str) {
        self.sql.push_str(s);
    }

    fn alias(&mut self) -> String {
        self.aliases += 1;
        format!("_t{}", self.aliases)
    }

    /// A string literal for names produced by GraphQL or the schema (quotes doubled).
    fn literal(&mut self, s: &str) {
        self.sql.push('\'');
        self.sql.push_str(&s.replace('\'', "''"));
        self.sql.push('\'');
    }

    fn ident(&mut self, s: &str) {
        self.sql.push_str(&quote_ident(s));
    }

    fn column(&mut self, alias: &str, column: &str) {
        self.push(alias);
        self.push(".");
        self.ident(column);
    }

    fn table(&mut self, t: &QualifiedTable) {
        self.sql.push_str(&quote_qualified(&t.schema, &t.name));
    }

    /// A placeholder for a value, cast to its type.
    fn value(&mut self, v: &ValueExpr) {
        let encoding = if v.cast.starts_with("json") {
            Encoding::Json
        } else if v.cast.ends_with("[]") {
            Encoding::PgArray
        } else {
            Encoding::Text
        };
        self.params.push(BoundParam {
            source: v.param.clone(),
            encoding,
        });
        let n = self.params.len();
        self.push(&format!("${n}::{}", v.cast));
    }

    /// A JSON array parameter unpacked into a Postgres array of `element` type.
    fn array(&mut self, v: &ValueExpr, element: &str) {
        if let Param::Session(_) = v.param {
            // Session variables carry Postgres array literals (`{1,2,3}`).
            self.value(&ValueExpr {
                param: v.param.clone(),
                cast: format!("{element}[]"),
            });
            return;
        }
        self.push("ARRAY(SELECT jsonb_array_elements_text(");
        self.value(&ValueExpr {
            param: v.param.clone(),
            cast: "jsonb".into(),
        });
        self.push(&format!("))::{element}[]"));
    }

    /// `json_build_object(k1, v1, …)`, falling back to an ordered `json_object_agg` past the
    /// argument limit. `pair(b, i)` writes `key, value`.
    fn object(&mut self, len: usize, mut pair: impl FnMut(&mut Self, usize)) {
        if len <= MAX_PAIRS {
            self.push("json_build_object(");
            for i in 0..len {
                if i > 0 {
                    self.push(", ");
                }
                pair(self, i);
            }
            self.push(")");
            return;
        }
        self.push("(SELECT json_object_agg(_kv.k, _kv.v ORDER BY _kv.o) FROM (VALUES ");
        for i in 0..len {
            if i > 0 {
                self.push(", ");
            }
            let mut item = Builder {
                sql: String::new(),
                params: std::mem::take(&mut self.params),
                aliases: self.aliases,
                paged: std::mem::take(&mut self.paged),
            };
            pair(&mut item, i);
            self.params = item.params;
            self.paged = item.paged;
            self.aliases = item.aliases;
            // `item.sql` is "key, value": wrap the value in to_json and add the position.
            let (key, value) = item.sql.split_once(", ").unwrap_or((&item.sql, "NULL"));
            self.push(&format!("({key}, to_json({value}), {i})"));
        }
        self.push(") AS _kv(k, v, o))");
    }

    fn join(
        &mut self,
        join: &[(String, String)],
        parent: Option<&str>,
        alias: &str,
        first: &mut bool,
    ) {
        let Some(parent) = parent else { return };
        for (local, remote) in join {
            self.and(first);
            self.column(alias, remote);
            self.push(" = ");
            self.column(parent, local);
        }
    }

    fn and(&mut self, first: &mut bool) {
        self.push(if *first { " WHERE " } else { " AND " });
        *first = false;
    }

    fn source(&mut self, source: &Source, parent: Option<&str>) {
        match source {
            Source::Table(t) => self.table(t),
            Source::Written(name) => self.ident(name),
            Source::Function { function, args } => {
                self.call(function, args, parent.unwrap_or("NULL"))
            }
        }
    }

    fn call(&mut self, function: &QualifiedTable, args: &[FunctionArg], row: &str) {
        self.table(function);
        self.push("(");
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            if !arg.name.is_empty() {
                self.ident(&arg.name);
                self.push(" => ");
            }
            match &arg.value {
                FunctionArgValue::Row => {
                    self.push(row);
                    if let Some((_, table)) = self.paged.iter().find(|(a, _)| a == row) {
                        let table = table.clone();
                        self.push("::");
                        self.table(&table);
                    }
                }
                FunctionArgValue::Value(v) => self.value(v),
            }
        }
        self.push(")");
    }

    /// `FROM source AS alias WHERE join AND filters` (without ORDER BY/LIMIT).
    fn select_from(
        &mut self,
        source: &Source,
        join: &[(String, String)],
        args: &RowArgs,
        parent: Option<&str>,
        alias: &str,
    ) {
        self.push(" FROM ");
        self.source(source, parent);
        self.push(" AS ");
        self.push(alias);
        let mut first = true;
        self.join(join, parent, alias, &mut first);
        for f in args
            .filter
            .iter()
            .map(simplify)
            .filter(|f| *f != BoolExpr::True)
        {
            self.and(&mut first);
            self.bool_expr(&f, alias, alias);
        }
    }

    fn order_and_page(&mut self, args: &RowArgs, alias: &str, single: bool) {
        let mut orders: Vec<(Option<&OrderExpr>, Option<&String>, Direction)> = Vec::new();
        if args.order_by.is_empty() {
            for c in &args.distinct_on {
                orders.push((
                    None,
                    Some(c),
                    Direction {
                        descending: false,
                        nulls_first: false,
                    },
                ));
            }
        }
        for o in &args.order_by {
            orders.push((Some(&o.expr), None, o.direction));
        }
        if !orders.is_empty() {
            self.push(" ORDER BY ");
            for (i, (expr, column, direction)) in orders.into_iter().enumerate() {
                if i > 0 {
                    self.push(", ");
                }
                match (expr, column) {
                    (Some(e), _) => self.order_expr(e, alias),
                    (None, Some(c)) => self.column(alias, c),
                    _ => {}
                }
                self.direction(direction);
            }
        }
        if single {
            self.push(" LIMIT 1");
        } else if !args.limit.is_empty() {
            self.push(" LIMIT ");
            if args.limit.len() == 1 {
                self.value(&args.limit[0]);
            } else {
                self.push("least(");
                for (i, l) in args.limit.iter().enumerate() {
                    if i > 0 {
                        self.push(", ");
                    }
                    self.value(l);
                }
                self.push(")");
            }
        }
        if let Some(offset) = &args.offset {
            self.push(" OFFSET ");
            self.value(offset);
        }
    }

    fn direction(&mut self, d: Direction) {
        self.push(match (d.descending, d.nulls_first) {
            (false, false) => " ASC NULLS LAST",
            (false, true) => " ASC NULLS FIRST",
            (true, true) => " DESC NULLS FIRST",
            (true, false) => " DESC NULLS LAST",
        });
    }

    fn distinct(&mut self, args: &RowArgs, alias: &str) {
        if args.distinct_on.is_empty() {
            return;
        }
        self.push("DISTINCT ON (");
        for (i, c) in args.distinct_on.iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.column(alias, c);
        }
        self.push(") ");
    }

    /// A subquery yielding the JSON of a selection (array, or object/null when single).
    fn select(&mut self, s: &Select, parent: Option<&str>) {
        let alias = self.alias();
        if s.single {
            self.push("(SELECT ");
            self.row_object(&s.fields, &alias, parent);
            self.select_from(&s.source, &s.join, &s.args, parent, &alias);
            self.order_and_page(&s.args, &alias, true);
            self.push(")");
            return;
        }
        let outer = self.alias();
        self.push("(SELECT coalesce(json_agg(");
        self.push(&outer);
        self.push(".\"__j\"");
        self.agg_order(&s.args, &outer);
        self.push("), '[]'::json) FROM (SELECT ");
        // With an OFFSET, rows are paged in a subquery first: Postgres computes a row's select
        // list before the OFFSET skips it, so nested selections of skipped rows would be built
        // for nothing (20 authors at offset 5000 built 5020 article lists).
        let paged = match (&s.source, &s.args.offset) {
            (Source::Table(table), Some(_)) => Some(table.clone()),
            _ => None,
        };
        match &paged {
            Some(table) => self.paged.push((alias.clone(), table.clone())),
            None => self.distinct(&s.args, &alias),
        }
        self.row_object(&s.fields, &alias, parent);
        self.push(" AS \"__j\"");
        self.order_keys(&s.args, &alias);
        if paged.is_some() {
            self.push(" FROM (SELECT ");
            self.distinct(&s.args, &alias);
            self.push(&alias);
            self.push(".*");
        }
        self.select_from(&s.source, &s.join, &s.args, parent, &alias);
        self.order_and_page(&s.args, &alias, false);
        if paged.is_some() {
            self.push(") AS ");
            self.push(&alias);
        }
        self.push(") AS ");
        self.push(&outer);
        self.push(")");
    }

    /// Projects each ORDER BY expression as `"__oN"` so the outer aggregate keeps the order.
    fn order_keys(&mut self, args: &RowArgs, alias: &str) {
        for (i, o) in args.order_by.iter().enumerate() {
            self.push(", ");
            self.order_expr(&o.expr, alias);
            self.push(&format!(" AS \"__o{i}\""));
        }
    }

    fn agg_order(&mut self, args: &RowArgs, outer: &str) {
        if args.order_by.is_empty() {
            return;
        }
        self.push(" ORDER BY ");
        for (i, o) in args.order_by.iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.push(&format!("{outer}.\"__o{i}\""));
            self.direction(o.direction);
        }
    }

    fn row_object(&mut self, fields: &[(String, Field)], alias: &str, _parent: Option<&str>) {
        self.object(fields.len(), |b, i| {
            let (key, field) = &fields[i];
            b.literal(key);
            b.push(", ");
            b.field(field, alias);
        });
    }

    fn field(&mut self, field: &Field, alias: &str) {
        match field {
            Field::Column { column, path: None } => self.column(alias, column),
            Field::Column {
                column,
                path: Some(path),
            } => {
                self.push("(");
                self.column(alias, column);
                self.push(" #> ");
                self.array(path, "text");
                self.push(")");
            }
            Field::Constant(s) => self.literal(s),
            Field::Relationship {
                kind: RelationshipKind::Object | RelationshipKind::Array,
                select,
            } => self.select(select, Some(alias)),
            Field::Aggregate(a) => self.aggregate(a, Some(alias)),
            Field::Computed { function, args } => self.call(function, args, alias),
        }
    }

    fn aggregate(&mut self, a: &AggregateSelect, parent: Option<&str>) {
        let alias = self.alias();
        let outer = self.alias();
        // Columns the aggregate functions read, projected as "__aN".
        let mut projected: Vec<String> = Vec::new();
        for (_, f) in &a.fields {
            if let AggregateField::Aggregate(ops) = f {
                for (_, op) in ops {
                    let columns: Vec<&String> = match op {
                        AggregateOp::Count { columns, .. } => columns.iter().collect(),
                        AggregateOp::Function { columns, .. } => columns
                            .iter()
                            .filter_map(|(_, c)| match c {
                                AggregateColumn::Column(c) => Some(c),
                                AggregateColumn::Typename(_) => None,
                            })
                            .collect(),
                        AggregateOp::Constant(_) => Vec::new(),
                    };
                    for c in columns {
                        if !projected.contains(c) {
                            projected.push(c.clone());
                        }
                    }
                }
            }
        }
        let nodes: Option<&Vec<(String, Field)>> = a.fields.iter().find_map(|(_, f)| match f {
            AggregateField::Nodes(n) => Some(n),
            _ => None,
        });
        let slot = |c: &str, projected: &[String]| {
            format!(
                "{outer}.\"__a{}\"",
                projected.iter().position(|p| p == c).unwrap_or(0)
            )
        };
        self.push("(SELECT ");
        let fields = a.fields.clone();
        self.object(fields.len(), |b, i| {
            let (key, f) = &fields[i];
            b.literal(key);
            b.push(", ");
            match f {
                AggregateField::Constant(s) => b.literal(s),
                AggregateField::Nodes(_) => {
                    b.push(&format!("coalesce(json_agg({outer}.\"__j\""));
                    b.agg_order(&a.args, &outer);
                    b.push("), '[]'::json)");
                }
                AggregateField::Aggregate(ops) => {
                    b.object(ops.len(), |b, j| {
                        let (okey, op) = &ops[j];
                        b.literal(okey);
                        b.push(", ");
                        match op {
                            AggregateOp::Constant(s) => b.literal(s),
                            AggregateOp::Count { columns, distinct } => {
                                match (columns.as_slice(), distinct) {
                                    ([], _) => b.push("count(*)"),
                                    ([c], false) => {
                                        b.push(&format!("count({})", slot(c, &projected)))
                                    }
                                    ([c], true) => {
                                        b.push(&format!("count(DISTINCT {})", slot(c, &projected)))
                                    }
                                    (cs, true) => {
                                        let list: Vec<String> =
                                            cs.iter().map(|c| slot(c, &projected)).collect();
                                        b.push(&format!("count(DISTINCT ({}))", list.join(", ")));
                                    }
                                    (cs, false) => {
                                        let list: Vec<String> = cs
                                            .iter()
                                            .map(|c| format!("{} IS NOT NULL", slot(c, &projected)))
                                            .collect();
                                        b.push(&format!(
                                            "count(*) FILTER (WHERE {})",
                                            list.join(" AND ")
                                        ));
                                    }
                                }
                            }
                            AggregateOp::Function { function, columns } => {
                                let function = if is_aggregate_function(function) {
                                    function.as_str()
                                } else {
                                    "max"
                                };
                                b.object(columns.len(), |b, k| {
                                    let (ckey, column) = &columns[k];
                                    b.literal(ckey);
                                    b.push(", ");
                                    match column {
                                        AggregateColumn::Column(c) => {
                                            b.push(&format!("{function}({})", slot(c, &projected)))
                                        }
                                        AggregateColumn::Typename(t) => b.literal(t),
                                    }
                                });
                            }
                        }
                    });
                }
            }
        });
        self.push(" FROM (SELECT ");
        self.distinct(&a.args, &alias);
        self.push("1 AS \"__one\"");
        for (i, c) in projected.iter().enumerate() {
            self.push(", ");
            self.column(&alias, c);
            self.push(&format!(" AS \"__a{i}\""));
        }
        if let Some(nodes) = nodes {
            self.push(", ");
            self.row_object(nodes, &alias, parent);
            self.push(" AS \"__j\"");
        }
        self.order_keys(&a.args, &alias);
        self.select_from(
            &Source::Table(a.table.clone()),
            &a.join,
            &a.args,
            parent,
            &alias,
        );
        self.order_and_page(&a.args, &alias, false);
        self.push(") AS ");
        self.push(&outer);
        self.push(")");
    }

    fn order_expr(&mut self, e: &OrderExpr, alias: &str) {
        match e {
            OrderExpr::Column(c) => self.column(alias, c),
            OrderExpr::Object {
                table,
                join,
                filter,
                inner,
            } => {
                let r = self.alias();
                self.push("(SELECT ");
                self.order_expr(inner, &r);
                self.push(" FROM ");
                self.table(table);
                self.push(" AS ");
                self.push(&r);
                let mut first = true;
                self.join(join, Some(alias), &r, &mut first);
                self.filter(filter, &r, &mut first);
                self.push(" LIMIT 1)");
            }
            OrderExpr::Aggregate {
                table,
                join,
                filter,
                function,
                column,
            } => {
                let r = self.alias();
                self.push("(SELECT ");
                match column {
                    None => self.push("count(*)"),
                    Some(c) => {
                        let function = if is_aggregate_function(function) {
                            function.as_str()
                        } else {
                            "max"
                        };
                        self.push(function);
                        self.push("(");
                        self.column(&r, c);
                        self.push(")");
                    }
                }
                self.push(" FROM ");
                self.table(table);
                self.push(" AS ");
                self.push(&r);
                let mut first = true;
                self.join(join, Some(alias), &r, &mut first);
                self.filter(filter, &r, &mut first);
                self.push(")");
            }
        }
    }

    /// `AND <filter>` unless the filter is trivially true.
    fn filter(&mut self, filter: &BoolExpr, alias: &str, first: &mut bool) {
        let f = simplify(filter);
        if f != BoolExpr::True {
            self.and(first);
            self.bool_expr(&f, alias, alias);
        }
    }

    fn column_expr(&mut self, c: &ColumnExpr, current: &str, root: &str) {
        let alias = match c.scope {
            Scope::Current => current,
            Scope::Root => root,
        };
        if let Some(cast) = &c.cast {
            self.push("(");
            self.column(alias, &c.column);
            self.push(&format!(")::{cast}"));
        } else {
            self.column(alias, &c.column);
        }
    }

    /// Renders an already [`simplify`]-ed expression.
    fn bool_expr(&mut self, e: &BoolExpr, current: &str, root: &str) {
        match e {
            BoolExpr::True => self.push("true"),
            BoolExpr::And(parts) | BoolExpr::Or(parts) => {
                let or = matches!(e, BoolExpr::Or(_));
                if parts.is_empty() {
                    self.push(if or { "false" } else { "true" });
                    return;
                }
                self.push("(");
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        self.push(if or { " OR " } else { " AND " });
                    }
                    self.bool_expr(p, current, root);
                }
                self.push(")");
            }
            BoolExpr::Not(inner) => {
                self.push("NOT ");
                self.bool_expr(inner, current, root);
            }
            BoolExpr::Permission(inner) => self.bool_expr(inner, current, current),
            BoolExpr::CtidIn(ctids) => {
                self.push("(");
                self.push(current);
                self.push(".ctid = ANY(");
                self.value(ctids);
                self.push("))");
            }
            BoolExpr::IsNull { column, is_null } => {
                self.push("(");
                self.column_expr(column, current, root);
                self.push(if *is_null {
                    " IS NULL)"
                } else {
                    " IS NOT NULL)"
                });
            }
            BoolExpr::CompareColumns { left, op, right } => {
                self.push("(");
                self.column_expr(left, current, root);
                self.push(&format!(" {} ", scalar_operator(*op)));
                self.column_expr(right, current, root);
                self.push(")");
            }
            BoolExpr::Compare { column, op, value } => {
                self.push("(");
                self.column_expr(column, current, root);
                match op {
                    CompareOp::In | CompareOp::Nin => {
                        self.push(if *op == CompareOp::In {
                            " = ANY("
                        } else {
                            " <> ALL("
                        });
                        self.array(value, &value.cast);
                        self.push(")");
                    }
                    CompareOp::HasKeysAny | CompareOp::HasKeysAll => {
                        self.push(if *op == CompareOp::HasKeysAny {
                            " ?| "
                        } else {
                            " ?& "
                        });
                        self.array(value, "text");
                    }
                    _ => {
                        self.push(&format!(" {} ", scalar_operator(*op)));
                        self.value(value);
                    }
                }
                self.push(")");
            }
            BoolExpr::Exists {
                table,
                join,
                filter,
            } => {
                let r = self.alias();
                self.push("EXISTS (SELECT 1 FROM ");
                self.table(table);
                self.push(" AS ");
                self.push(&r);
                let mut first = true;
                self.join(join, Some(current), &r, &mut first);
                self.and(&mut first);
                self.bool_expr(filter, &r, root);
                self.push(")");
            }
        }
    }
}

/// Flattens nested conjunctions, drops `true` conjuncts and unwraps one-element lists, so the
/// SQL stays small and readable. Never changes the meaning.
fn simplify(e: &BoolExpr) -> BoolExpr {
    match e {
        BoolExpr::And(parts) => {
            let mut flat = Vec::new();
            for p in parts.iter().map(simplify) {
                match p {
                    BoolExpr::True => {}
                    BoolExpr::And(inner) => flat.extend(inner),
                    other => flat.push(other),
                }
            }
            match flat.len() {
                0 => BoolExpr::True,
                1 => flat.remove(0),
                _ => BoolExpr::And(flat),
            }
        }
        BoolExpr::Or(parts) => {
            let parts: Vec<BoolExpr> = parts.iter().map(simplify).collect();
            if parts.contains(&BoolExpr::True) {
                return BoolExpr::True;
            }
            match parts.len() {
                1 => parts.into_iter().next().unwrap_or(BoolExpr::True),
                _ => BoolExpr::Or(parts),
            }
        }
        BoolExpr::Not(inner) => BoolExpr::Not(Box::new(simplify(inner))),
        BoolExpr::Permission(inner) => match simplify(inner) {
            BoolExpr::True => BoolExpr::True,
            other => BoolExpr::Permission(Box::new(other)),
        },
        BoolExpr::Exists {
            table,
            join,
            filter,
        } => BoolExpr::Exists {
            table: table.clone(),
            join: join.clone(),
            filter: Box::new(simplify(filter)),
        },
        other => other.clone(),
    }
}

fn scalar_operator(op: CompareOp) -> &'static str {
    use CompareOp::*;
    match op {
        Eq => "=",
        Neq => "<>",
        Gt => ">",
        Lt => "<",
        Gte => ">=",
        Lte => "<=",
        Like => "LIKE",
        Nlike => "NOT LIKE",
        Ilike => "ILIKE",
        Nilike => "NOT ILIKE",
        Similar => "SIMILAR TO",
        Nsimilar => "NOT SIMILAR TO",
        Regex => "~",
        Iregex => "~*",
        Nregex => "!~",
        Niregex => "!~*",
        Contains => "@>",
        ContainedIn => "<@",
        HasKey => "?",
        In | Nin | HasKeysAny | HasKeysAll => "=",
    }
}
