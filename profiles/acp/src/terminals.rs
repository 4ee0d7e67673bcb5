//! The client's terminals (`terminal/*`): the [`Terminals`] a client answers the agent's
//! terminal requests with, and [`LocalTerminals`], which runs the commands as child
//! processes of this one.

use std::collections::HashMap;
use std::future::Future;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol_schema::v1::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, TerminalExitStatus, TerminalId,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
};
use rpcwire_tokio::{ErrorCode, RpcError};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How a client answers the agent's terminal requests. Give it to
/// [`ClientHandlers::terminals`](crate::ClientHandlers::terminals), which advertises the
/// `terminal` capability. [`LocalTerminals`] is one, running the commands on this machine.
pub trait Terminals: Send + Sync + 'static {
    /// `terminal/create`: starts the command; answers at once with the terminal's id.
    fn create(
        &self,
        request: CreateTerminalRequest,
    ) -> impl Future<Output = Result<CreateTerminalResponse, RpcError>> + Send;
    /// `terminal/output`: the output so far, and the exit status once it exited.
    fn output(
        &self,
        request: TerminalOutputRequest,
    ) -> impl Future<Output = Result<TerminalOutputResponse, RpcError>> + Send;
    /// `terminal/wait_for_exit`: answers when the command exits.
    fn wait_for_exit(
        &self,
        request: WaitForTerminalExitRequest,
    ) -> impl Future<Output = Result<WaitForTerminalExitResponse, RpcError>> + Send;
    /// `terminal/kill`: kills the command, keeping the terminal and its output.
    fn kill(
        &self,
        request: KillTerminalRequest,
    ) -> impl Future<Output = Result<KillTerminalResponse, RpcError>> + Send;
    /// `terminal/release`: kills the command if it still runs and forgets the terminal.
    fn release(
        &self,
        request: ReleaseTerminalRequest,
    ) -> impl Future<Output = Result<ReleaseTerminalResponse, RpcError>> + Send;
}

/// The output kept when a request gives no `outputByteLimit` (1 MiB).
pub const DEFAULT_OUTPUT_LIMIT: usize = 1 << 20;

/// The most terminals [`LocalTerminals`] keeps at once (default 16): a `terminal/create`
/// beyond it is refused until one is released.
pub const DEFAULT_MAX_TERMINALS: usize = 16;

/// A command's output, the last `limit` bytes of it.
struct Output {
    text: Vec<u8>,
    limit: usize,
    truncated: bool,
}

impl Output {
    fn push(&mut self, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
        if self.text.len() > self.limit {
            let cut = self.text.len() - self.limit;
            self.text.drain(..cut);
            self.truncated = true;
        }
    }

    /// The text, from a character boundary (the cut may fall inside a character).
    fn text(&self) -> String {
        let start = if self.truncated {
            self.text
                .iter()
                .position(|b| (*b as i8) >= -0x40)
                .unwrap_or(0)
        } else {
            0
        };
        String::from_utf8_lossy(&self.text[start..]).into_owned()
    }
}

/// One running or exited command.
struct Term {
    output: Arc<Mutex<Output>>,
    exit: watch::Receiver<Option<TerminalExitStatus>>,
    kill: CancellationToken,
}

/// Runs the agent's commands as child processes of this one (as the user running the
/// editor: offer terminals only to agents you trust), each with its output kept up to the
/// request's `outputByteLimit` (else [`DEFAULT_OUTPUT_LIMIT`]), at most
/// [`DEFAULT_MAX_TERMINALS`] at once. Dropping it kills the commands still running.
///
/// ```
/// use rpcwire_acp::{ClientHandlers, LocalTerminals};
/// let handlers = ClientHandlers::new().terminals(LocalTerminals::new());
/// # let _ = handlers;
/// ```
#[derive(Default)]
pub struct LocalTerminals {
    terms: Mutex<HashMap<TerminalId, Term>>,
    next: AtomicU64,
    max: Option<usize>,
}

impl std::fmt::Debug for LocalTerminals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.lock().len();
        f.debug_struct("LocalTerminals")
            .field("terminals", &n)
            .finish()
    }
}

fn not_found(id: &TerminalId) -> RpcError {
    RpcError::new(
        ErrorCode(-32002),
        format!("Resource not found: no terminal {id}"),
    )
}

/// A signal's name as ACP reports it.
#[cfg(unix)]
fn signal_name(status: &std::process::ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map(|s| match s {
        1 => "SIGHUP".to_owned(),
        2 => "SIGINT".to_owned(),
        9 => "SIGKILL".to_owned(),
        15 => "SIGTERM".to_owned(),
        other => format!("signal {other}"),
    })
}

#[cfg(not(unix))]
fn signal_name(_: &std::process::ExitStatus) -> Option<String> {
    None
}

/// Copies a pipe into the output until it ends.
async fn collect(mut pipe: impl AsyncRead + Unpin, output: Arc<Mutex<Output>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = pipe.read(&mut buf).await {
        output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(&buf[..n]);
    }
}

impl LocalTerminals {
    /// No terminals yet, the default limits.
    pub fn new() -> Self {
        LocalTerminals::default()
    }

    /// At most `max` terminals at once.
    pub fn max_terminals(mut self, max: usize) -> Self {
        self.max = Some(max);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TerminalId, Term>> {
        self.terms.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with<T>(&self, id: &TerminalId, f: impl FnOnce(&Term) -> T) -> Result<T, RpcError> {
        self.lock().get(id).map(f).ok_or_else(|| not_found(id))
    }
}

impl Terminals for LocalTerminals {
    async fn create(
        &self,
        request: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, RpcError> {
        if self.lock().len() >= self.max.unwrap_or(DEFAULT_MAX_TERMINALS) {
            return Err(RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "too many terminals: release one first",
            ));
        }
        let mut command = tokio::process::Command::new(&request.command);
        command
            .args(&request.args)
            .envs(request.env.iter().map(|e| (&e.name, &e.value)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = &request.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(|e| {
            RpcError::new(
                ErrorCode::INTERNAL_ERROR,
                format!("cannot run {}: {e}", request.command),
            )
        })?;
        let limit = request
            .output_byte_limit
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(DEFAULT_OUTPUT_LIMIT);
        let output = Arc::new(Mutex::new(Output {
            text: Vec::new(),
            limit,
            truncated: false,
        }));
        let pipes = (child.stdout.take(), child.stderr.take());
        let (exit_tx, exit) = watch::channel(None);
        let kill = CancellationToken::new();
        let (out, killed) = (Arc::clone(&output), kill.clone());
        tokio::spawn(async move {
            let readers = async {
                let (stdout, stderr) = pipes;
                let one = async {
                    if let Some(p) = stdout {
                        collect(p, Arc::clone(&out)).await;
                    }
                };
                let two = async {
                    if let Some(p) = stderr {
                        collect(p, Arc::clone(&out)).await;
                    }
                };
                tokio::join!(one, two);
            };
            let status = tokio::select! {
                status = async { readers.await; child.wait().await } => status,
                () = killed.cancelled() => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let mut exit = TerminalExitStatus::new();
            if let Ok(status) = status {
                exit.exit_code = status.code().and_then(|c| u32::try_from(c).ok());
                exit.signal = signal_name(&status);
            }
            let _ = exit_tx.send(Some(exit));
        });
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = TerminalId::new(format!("term-{n}"));
        self.lock().insert(id.clone(), Term { output, exit, kill });
        Ok(CreateTerminalResponse::new(id))
    }

    async fn output(
        &self,
        request: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, RpcError> {
        self.with(&request.terminal_id, |t| {
            let output = t.output.lock().unwrap_or_else(PoisonError::into_inner);
            let mut answer = TerminalOutputResponse::new(output.text(), output.truncated);
            answer.exit_status = t.exit.borrow().clone();
            answer
        })
    }

    async fn wait_for_exit(
        &self,
        request: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, RpcError> {
        let mut exit = self.with(&request.terminal_id, |t| t.exit.clone())?;
        let status = exit
            .wait_for(Option::is_some)
            .await
            .map_err(|_| not_found(&request.terminal_id))?
            .clone()
            .unwrap_or_default();
        Ok(WaitForTerminalExitResponse::new(status))
    }

    async fn kill(&self, request: KillTerminalRequest) -> Result<KillTerminalResponse, RpcError> {
        self.with(&request.terminal_id, |t| t.kill.cancel())?;
        Ok(KillTerminalResponse::new())
    }

    async fn release(
        &self,
        request: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, RpcError> {
        let term = self
            .lock()
            .remove(&request.terminal_id)
            .ok_or_else(|| not_found(&request.terminal_id))?;
        term.kill.cancel();
        Ok(ReleaseTerminalResponse::new())
    }
}

impl Drop for LocalTerminals {
    fn drop(&mut self) {
        for term in self.lock().values() {
            term.kill.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_keeps_the_last_bytes_from_a_character_boundary() {
        let mut out = Output {
            text: Vec::new(),
            limit: 4,
            truncated: false,
        };
        out.push("ab".as_bytes());
        assert_eq!((out.text(), out.truncated), ("ab".to_owned(), false));
        out.push("cdé".as_bytes()); // 6 bytes in all: "cdé" kept is 4 bytes
        assert_eq!((out.text(), out.truncated), ("cdé".to_owned(), true));
        out.limit = 3;
        out.push("é".as_bytes()); // "é" "é" kept as A9 C3 A9: the cut falls inside the first
        assert_eq!(out.text(), "é");
    }
}
