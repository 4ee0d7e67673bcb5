//! A connection driven in its caller's task instead of a task of its own.

use std::future::Future;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use crate::controls::Controls;
use crate::driver::{self, Channels, Settings};
use crate::ratelimit::RateLimiter;
use crate::{Builder, Client, DriverError};

impl Builder {
    /// Like [`run`](Builder::run), but hands the driver back as a future instead of spawning
    /// it: the caller polls it in its own task, beside the code that feeds `reader` and
    /// drains `writer`, with no hand-off between tasks (an HTTP server answering one body
    /// within the task serving the request). The future ends as `run`'s task does; dropping
    /// it ends the connection at once.
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, Router, RpcError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let router = Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b));
    /// let input: &'static [u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,2],\"id\":1}\n";
    /// let (writer, mut output) = tokio::io::duplex(4096);
    /// let (_client, driver) = Builder::new().router(router).run_inline(input, writer);
    /// driver.await?; // end of input: answers what it read, then ends
    /// let mut answer = String::new();
    /// tokio::io::AsyncReadExt::read_to_string(&mut output, &mut answer).await?;
    /// assert_eq!(answer, "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}\n");
    /// # Ok(()) }
    /// ```
    pub fn run_inline<R, W>(
        self,
        reader: R,
        writer: W,
    ) -> (Client, impl Future<Output = Result<(), DriverError>> + Send)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (cmd_tx, cmd_rx) = mpsc::channel(self.command_capacity);
        let (ctl_tx, ctl_rx) = Controls::pair();
        let client = Client::new(cmd_tx, ctl_tx, self.config.request_timeout)
            .with_meta_traces(self.meta_traces);
        let channels = Channels {
            cmd: cmd_rx,
            ctl: ctl_rx,
            peer: self.router.as_ref().map(|_| client.clone()),
        };
        let caller = self.caller_or_anonymous();
        let settings = Settings {
            config: self.config,
            concurrency: self.concurrency,
            queue_bytes: self.queue_bytes,
            idle_release: self.idle_release,
            cancel: self.cancel,
            limiter: self
                .rate_limit
                .map(|limiter| (limiter, RateLimiter::key(&caller).into_boxed_str())),
            caller,
            router: self.router,
            outgoing_traces: self.outgoing_traces,
            batch_spans: self.batch_spans,
        };
        (client, driver::run(settings, reader, writer, channels))
    }
}
