//! What a server's service is to the crate's serve loops: [`HandlesIncoming`] (a request as
//! hyper reads it) and [`HandlesWhole`] (a request read whole by the HTTP/1.1 fast path). The
//! JSON-RPC server and every profile's server implement them.

use std::future::Future;
use std::pin::Pin;

use http::{Request, Response};

use crate::body::Body;
use crate::endpoint::Endpoint;

/// A future that answers one request.
pub type ResponseFuture = Pin<Box<dyn Future<Output = Response<Body>> + Send + 'static>>;

/// A server's service as hyper calls it: every server of the crate, and a profile's, answers
/// with a [`ResponseFuture`]. Implement it (and [`HandlesWhole`]) to run a service with
/// [`serve_profile`](crate::profile::serve_profile), or alone with
/// [`serve_hyper_connection`](crate::profile::serve_hyper_connection).
pub trait HandlesIncoming: Clone + Send + Sync + 'static {
    /// Answers one request.
    fn handle_incoming(&self, req: Request<hyper::body::Incoming>) -> ResponseFuture;

    /// Whether every request must carry its connection's peer address
    /// ([`connection_peer`](crate::profile::connection_peer)) even while no subscriber listens to
    /// call spans (which always get it): a service that rate-limits anonymous callers by address
    /// says yes. No by default: telling each request costs an allocation.
    fn wants_peer(&self) -> bool {
        false
    }
}

/// A service that also answers requests read whole, so that
/// [`serve_profile`](crate::profile::serve_profile) serves its HTTP/1.1 connections on the
/// crate's fast path, with no hyper connection under them (an open event stream holds no
/// hyper buffers); hyper's path ([`HandlesIncoming`]) takes the requests that one does not.
pub trait HandlesWhole: HandlesIncoming {
    /// The service's settings: its body limit (a longer body goes to hyper's path, where the
    /// service refuses it as it reads), request time, connection limit and idle time.
    fn endpoint(&self) -> &Endpoint;

    /// Answers one request whose body (at most [`Endpoint::max_body`] bytes) has been read:
    /// as [`HandlesIncoming::handle_incoming`] answers the same request.
    fn handle_whole(&self, req: Request<Body>) -> ResponseFuture;
}
