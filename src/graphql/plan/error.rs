//! Why a document cannot be planned for a role: each failure a [`Problem`] (its `Display` is
//! the message the client gets), at a JSON path of the request, of a [`PlanErrorKind`] that
//! decides the wire code (`docs/graphql.md`, "Error codes").

/// A GraphQL request error: the problem, and where in the request it lies.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{problem}")]
pub struct PlanError {
    /// `$.selectionSet.…` location.
    pub path: String,
    pub problem: Problem,
}

/// The kinds of planning failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanErrorKind {
    /// The document (or a JSON path in it) does not parse.
    Parse,
    /// The document does not fit the role's schema or the limits.
    Validation,
    /// The document asks for something that exists but cannot be done this way.
    NotSupported,
}

impl PlanError {
    /// `problem` at `path`.
    pub fn at(path: &str, problem: Problem) -> Self {
        PlanError {
            path: path.to_owned(),
            problem,
        }
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> PlanErrorKind {
        self.problem.kind()
    }

    /// `field "<field>" not found in type: '<type>'`.
    pub(super) fn unknown_field(
        path: &str,
        field: impl std::fmt::Display,
        type_name: impl std::fmt::Display,
    ) -> Self {
        PlanError::at(
            path,
            Problem::UnknownField {
                field: field.to_string(),
                type_name: type_name.to_string(),
            },
        )
    }
}

/// What is wrong with a document, as the client is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    // The text of the request.
    /// The parser's own message.
    #[error("{0}")]
    Syntax(String),
    #[error("parse json path error: invalid path \"{0}\"")]
    JsonPath(String),

    // The operation.
    #[error("no operation found in the document")]
    NoOperation,
    #[error("operationName is required if query has multiple operations")]
    OperationNameRequired,
    #[error("no such operation found in the document: \"{0}\"")]
    NoSuchOperation(String),
    #[error("no mutations exist")]
    NoMutations,
    #[error("no subscriptions exist")]
    NoSubscriptions,
    #[error("subscription to remote server is not supported")]
    RemoteSubscription,
    #[error("Remote relationships are not allowed in subscriptions")]
    RemoteJoinInSubscription,
    #[error("one streaming column field is expected")]
    NoStreamColumn,
    #[error("multiple column cursors are not supported yet")]
    SeveralStreamColumns,
    #[error("batch_size must be a non-negative integer, got {0}")]
    NegativeBatchSize(String),
    #[error("streaming and livequery subscriptions cannot be executed in the same subscription")]
    StreamBesideLiveQuery,
    #[error("exactly one root field is allowed for streaming subscriptions")]
    SeveralStreams,

    // Fragments and directives.
    #[error("fragment \"{0}\" not found")]
    UnknownFragment(String),
    #[error("fragment nesting too deep (cycle?)")]
    FragmentCycle,
    #[error("directive \"{0}\" is not allowed here")]
    DirectiveNotAllowed(String),
    #[error("directive \"{0}\" needs an \"if\" argument")]
    DirectiveNeedsIf(String),
    #[error("expected a Boolean for \"if\"")]
    IfNotBoolean,

    // Limits.
    #[error("query depth exceeds {0}")]
    TooDeep(usize),
    #[error("too many root fields: {count} (at most {max})")]
    TooManyRootFields { count: usize, max: usize },
    #[error("the operation selects more than {0} fields (fragments expanded)")]
    TooManyFields(usize),

    // Fields, arguments and types.
    #[error("field \"{field}\" not found in type: '{type_name}'")]
    UnknownField { field: String, type_name: String },
    #[error("'{0}' has no arguments")]
    NoArguments(String),
    #[error("'{field}' has no argument named '{argument}'")]
    UnknownArgument { field: String, argument: String },
    #[error("field \"{0}\" must not have a selection since its type is a scalar")]
    SelectionOnScalar(String),
    #[error("missing selection set for field of type \"{0}\"")]
    MissingSelection(String),
    #[error("type \"{0}\" not found or not an object type")]
    NotAnObjectType(String),
    #[error("type \"{0}\" not found or not an object, interface or union type")]
    NotACompositeType(String),
    #[error("unknown type \"{0}\"")]
    UnknownType(String),

    // Variables and values.
    #[error("unbound variable \"{0}\"")]
    UnboundVariable(String),
    #[error("variable \"{name}\" has unknown or non-input type \"{ty}\"")]
    VariableType { name: String, ty: String },
    #[error(
        "variable \"{name}\" of type \"{given}\" cannot be used where \"{expected}\" is expected"
    )]
    VariableMismatch {
        name: String,
        given: String,
        expected: String,
    },
    #[error("expecting a value for non-nullable variable: \"{0}\"")]
    MissingVariable(String),
    #[error("expected a value of type \"{ty}\", found {found}")]
    WrongValue { ty: String, found: String },
    #[error("expected a value of type \"{0}\", found null")]
    UnexpectedNull(String),
    #[error("expected an object for type \"{0}\"")]
    ExpectedObjectOf(String),
    #[error("expected an object")]
    ExpectedObject,
    #[error("expected one of the values of enum \"{name}\", found {found}")]
    NotInEnum { name: String, found: String },
    #[error("missing required field '{0}'")]
    MissingField(String),
    #[error("invalid type")]
    InvalidType,
    #[error("unexpected negative value")]
    Negative,
    #[error("binary values are not supported")]
    Binary,

    // Tables, permissions and writes.
    #[error("table \"{0}\" is not available")]
    TableNotAvailable(String),
    #[error("table \"{0}\" is not writable")]
    NotWritable(String),
    #[error("table \"{0}\" has no view")]
    NoView(String),
    #[error("no insert permission on \"{0}\"")]
    NoInsertPermission(String),
    #[error("no update permission")]
    NoUpdatePermission,
    #[error("no delete permission")]
    NoDeletePermission,
    #[error("on_conflict needs an update permission")]
    OnConflictNeedsUpdate,
    #[error("\"distinct_on\" columns must match initial \"order_by\" columns")]
    DistinctOnOrder,
    /// The arguments listed are the field's own operators and `_nested`.
    #[error("at least one of {0} is expected")]
    NoUpdateOperator(String),
    #[error("\"_delete\" cannot be combined with update operators or \"_nested\"")]
    DeleteCombined,
    #[error("nested update of relationship \"{0}\" has nothing to do")]
    NothingToDo(String),
    #[error("nested updates of \"{0}\" need its primary key")]
    NestedNeedsKey(String),
    #[error("column \"{0}\" can be used in only one update operator")]
    ColumnInTwoOperators(String),
    #[error(
        "cannot insert into column \"{0}\": its value comes from the nested insert's relationship"
    )]
    ColumnFromRelationship(String),
    #[error(
        "cannot insert through a relationship into column \"{0}\": the insert permission presets it"
    )]
    PresetThroughRelationship(String),
    #[error("nested inserts into or through the view \"{0}\" are not supported")]
    NestedThroughView(String),
    #[error("nested inserts into the view \"{0}\" are not supported")]
    NestedIntoView(String),

    // Tracked functions.
    #[error("Non default arguments cannot be omitted")]
    NonDefaultOmitted,
    #[error("Only last set of positional arguments can be omitted")]
    PositionalOmitted,
}

impl Problem {
    /// What kind of failure it is.
    pub fn kind(&self) -> PlanErrorKind {
        match self {
            Problem::Syntax(_) | Problem::JsonPath(_) => PlanErrorKind::Parse,
            Problem::RemoteSubscription
            | Problem::RemoteJoinInSubscription
            | Problem::StreamBesideLiveQuery
            | Problem::SeveralStreams
            | Problem::NonDefaultOmitted
            | Problem::PositionalOmitted => PlanErrorKind::NotSupported,
            _ => PlanErrorKind::Validation,
        }
    }
}
