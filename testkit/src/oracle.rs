//! Method models: what each method should answer, as a function of its params (and, for a
//! stateful service, of a model of its state). The harnesses check every answer against them.

use std::fmt;
use std::sync::Arc;

use rpcwire::ErrorCode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// What a request must be answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// A result equal (as JSON) to this value.
    Result(Value),
    /// An error with this code (any message and data).
    Error(ErrorCode),
    /// Any valid answer (the method is not checked).
    Any,
}

impl Expected {
    /// Whether an answer (`Ok(result)` or `Err(code)`) is the expected one. A busy answer
    /// (the core's `-32001`, the request never reached the service) passes any expectation.
    pub(crate) fn admits(&self, answer: &Result<Value, i64>) -> bool {
        match (self, answer) {
            (_, Err(code)) if *code == i64::from(ErrorCode::SERVER_BUSY.0) => true,
            (Expected::Any, _) => true,
            (Expected::Result(want), Ok(got)) => want == got,
            (Expected::Error(want), Err(got)) => i64::from(want.0) == *got,
            _ => false,
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Result(v) => write!(f, "result {v}"),
            Expected::Error(code) => write!(f, "error {code}"),
            Expected::Any => f.write_str("any answer"),
        }
    }
}

impl<R: Serialize> From<Result<R, ErrorCode>> for Expected {
    fn from(answer: Result<R, ErrorCode>) -> Self {
        match answer {
            // A result that does not serialize cannot be compared: the model is wrong, and
            // `Internal error` (what a router answers then) is what it expects.
            Ok(r) => serde_json::to_value(r)
                .map_or(Expected::Error(ErrorCode::INTERNAL_ERROR), Expected::Result),
            Err(code) => Expected::Error(code),
        }
    }
}

/// A method's model after type erasure: params as JSON text (`None`: absent) in, the expected
/// answer out, the state updated.
type MethodFn<S> = Arc<dyn Fn(&mut S, Option<&str>) -> Expected + Send + Sync>;

/// What a service's methods should answer: per method, a function of its params, and for a
/// stateful service of a model of its state, giving the expected result or error. Give it to
/// a harness ([`Harness::model`](crate::Harness::model),
/// [`Firmware::model`](crate::Firmware::model)) and every answer to a modelled method is
/// checked, in every case, batches included; a wrong one is a
/// [`Violation::WrongAnswer`](crate::Violation::WrongAnswer) and its case is shrunk as any other.
///
/// Params are decoded as the router decodes them (absent params as `null`); params that do
/// not decode as the model's type are expected to be answered Invalid params (`-32602`), the
/// state untouched. Methods the model does not name are not checked.
///
/// A stateful model ([`Model::with_state`]) starts each case from its initial state and
/// applies the calls (requests and notifications) in the order they were sent: the order an
/// rpcwire router starts handlers in. A service whose handlers interleave at `.await`s
/// answers in that order only if it keeps its state consistent (a lost update shows here);
/// one that is correct in another order is checked with
/// [`Harness::sequential`](crate::Harness::sequential), one frame at a time.
///
/// ```
/// use rpcwire_testkit::{Case, ErrorCode, Frame, Harness, Message, Model, Violation};
/// use rpcwire_tokio::{Router, RpcError};
/// use serde_json::json;
///
/// let router = Router::new().method("div", |(a, b): (i64, i64)| async move {
///     a.checked_div(b).ok_or_else(|| RpcError::invalid_params("division by zero"))
/// });
/// let model = Model::new().method("div", |(a, b): (i64, i64)| {
///     a.checked_div(b).ok_or(ErrorCode::INVALID_PARAMS)
/// });
/// let harness = Harness::new(router).model(model);
/// let case = Case::new(vec![
///     Frame::Single(Message::request("div", json!([7, 2]), 1)),
///     Frame::Single(Message::request("div", json!([7, 0]), 2)),
/// ]);
/// assert_eq!(harness.check(&case), Ok(()));
/// ```
pub struct Model<S = ()> {
    init: S,
    methods: Vec<(String, MethodFn<S>)>,
    notifications: Vec<(String, MethodFn<S>)>,
}

impl<S> fmt::Debug for Model<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |list: &[(String, MethodFn<S>)]| {
            list.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>()
        };
        f.debug_struct("Model")
            .field("methods", &names(&self.methods))
            .field("notifications", &names(&self.notifications))
            .finish_non_exhaustive()
    }
}

impl Model<()> {
    /// A model of a stateless service: each answer a function of the params.
    pub fn new() -> Self {
        Model::with_state(())
    }
}

impl Default for Model<()> {
    fn default() -> Self {
        Model::new()
    }
}

/// Decodes params as a router does: absent params as `null`.
fn decode<P: DeserializeOwned>(params: Option<&str>) -> Option<P> {
    serde_json::from_str(params.unwrap_or("null")).ok()
}

impl<S: Clone + Send + Sync + 'static> Model<S> {
    /// A model of a stateful service whose state starts as `init` in every case.
    pub fn with_state(init: S) -> Self {
        Model {
            init,
            methods: Vec::new(),
            notifications: Vec::new(),
        }
    }

    /// `name`'s answer as a function of its params: `Ok(result)` or `Err(code)`.
    pub fn method<P, R, F>(self, name: &str, f: F) -> Self
    where
        P: DeserializeOwned,
        R: Serialize,
        F: Fn(P) -> Result<R, ErrorCode> + Send + Sync + 'static,
    {
        self.method_with_state(name, move |_: &mut S, params: P| f(params))
    }

    /// `name`'s answer as a function of the model's state and its params; it may change the
    /// state (a `put`, say), which the next calls see.
    pub fn method_with_state<P, R, F>(mut self, name: &str, f: F) -> Self
    where
        P: DeserializeOwned,
        R: Serialize,
        F: Fn(&mut S, P) -> Result<R, ErrorCode> + Send + Sync + 'static,
    {
        let erased: MethodFn<S> = Arc::new(move |state, params| match decode::<P>(params) {
            Some(p) => Expected::from(f(state, p)),
            None => Expected::Error(ErrorCode::INVALID_PARAMS),
        });
        self.methods.retain(|(n, _)| n != name);
        self.methods.push((name.to_owned(), erased));
        self
    }

    /// A notification's effect on the model's state (notifications are never answered).
    /// Params that do not decode change nothing.
    pub fn notification_with_state<P, F>(mut self, name: &str, f: F) -> Self
    where
        P: DeserializeOwned,
        F: Fn(&mut S, P) + Send + Sync + 'static,
    {
        let erased: MethodFn<S> = Arc::new(move |state, params| {
            if let Some(p) = decode::<P>(params) {
                f(state, p);
            }
            Expected::Any
        });
        self.notifications.retain(|(n, _)| n != name);
        self.notifications.push((name.to_owned(), erased));
        self
    }

    /// The names of the modelled methods (requests), as registered.
    pub fn method_names(&self) -> Vec<&str> {
        self.methods.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// A model as the harnesses hold it: any state type, started afresh for each case.
pub(crate) trait Oracle: Send + Sync + fmt::Debug {
    /// A run over one case, from the initial state.
    fn start(&self) -> Box<dyn OracleRun + '_>;
}

/// A model running over one case: each call, in the order sent, gives its expected answer.
pub(crate) trait OracleRun {
    /// The call's expected answer (`None`: not modelled); for a notification, its effect on
    /// the state only.
    fn apply(&mut self, method: &str, params: Option<&str>, request: bool) -> Option<Expected>;
}

impl<S: Clone + Send + Sync + 'static> Oracle for Model<S> {
    fn start(&self) -> Box<dyn OracleRun + '_> {
        Box::new(Run {
            model: self,
            state: self.init.clone(),
        })
    }
}

struct Run<'m, S> {
    model: &'m Model<S>,
    state: S,
}

impl<S> OracleRun for Run<'_, S> {
    fn apply(&mut self, method: &str, params: Option<&str>, request: bool) -> Option<Expected> {
        let list = if request {
            &self.model.methods
        } else {
            &self.model.notifications
        };
        let (_, f) = list.iter().find(|(n, _)| n == method)?;
        let expected = f(&mut self.state, params);
        request.then_some(expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_models_decode_as_the_router_does() {
        let model = Model::new().method("add", |(a, b): (i64, i64)| Ok(a + b));
        let mut run = model.start();
        assert_eq!(
            run.apply("add", Some("[1,2]"), true),
            Some(Expected::Result(json!(3)))
        );
        assert_eq!(
            run.apply("add", Some("{\"a\":1}"), true),
            Some(Expected::Error(ErrorCode::INVALID_PARAMS))
        );
        assert_eq!(
            run.apply("add", None, true),
            Some(Expected::Error(ErrorCode::INVALID_PARAMS))
        );
        assert_eq!(run.apply("other", Some("[]"), true), None);
    }

    #[test]
    fn stateful_models_thread_their_state_and_start_afresh() {
        let model = Model::with_state(0i64)
            .method_with_state("incr", |n: &mut i64, (by,): (i64,)| {
                *n += by;
                Ok(*n)
            })
            .notification_with_state("reset", |n: &mut i64, (): ()| *n = 0);
        let mut run = model.start();
        assert_eq!(
            run.apply("incr", Some("[2]"), true),
            Some(Expected::Result(json!(2)))
        );
        assert_eq!(run.apply("reset", None, false), None);
        assert_eq!(
            run.apply("incr", Some("[5]"), true),
            Some(Expected::Result(json!(5)))
        );
        let mut fresh = model.start();
        assert_eq!(
            fresh.apply("incr", Some("[1]"), true),
            Some(Expected::Result(json!(1)))
        );
    }

    #[test]
    fn busy_answers_pass_and_codes_compare() {
        let busy = Err(i64::from(ErrorCode::SERVER_BUSY.0));
        assert!(Expected::Result(json!(1)).admits(&busy));
        assert!(!Expected::Result(json!(1)).admits(&Ok(json!(2))));
        assert!(Expected::Error(ErrorCode::INVALID_PARAMS).admits(&Err(-32602)));
        assert!(!Expected::Error(ErrorCode::INVALID_PARAMS).admits(&Ok(json!(null))));
    }
}
