//! What the `a2a` and `mcp_store` benches share: their settings from the environment, the
//! server process they measure, the HTTP/1.1 reader of their load and the Python of an
//! interop virtual environment.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use rpcwire_bench::Error;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The number in environment variable `name`, else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

/// A server process, killed on drop; its address as `HOST:PORT`.
pub struct Server {
    child: Child,
    pub addr: String,
}

impl Server {
    /// Starts `cmd` and waits for its line naming the address it listens on: rpcwire's
    /// `mcp-server: listening on http://ADDR/mcp` on stderr, `a2a-agent`'s and the Python
    /// scripts' `listening http://ADDR/` on stdout. The rest of that pipe is read and dropped (a full
    /// pipe would block the server).
    pub fn start(cmd: &mut Command, on_stderr: bool) -> Result<Server, Error> {
        cmd.stdin(Stdio::null());
        if on_stderr {
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        } else {
            cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        }
        let mut child = cmd.spawn().map_err(|e| Error::io("start the server", e))?;
        let pipe: Box<dyn Read + Send> = match (child.stdout.take(), child.stderr.take()) {
            (Some(out), _) => Box::new(out),
            (None, Some(err)) => Box::new(err),
            (None, None) => return Err(Error::Server("no output pipe".into())),
        };
        let mut lines = BufReader::new(pipe);
        let mut line = String::new();
        let addr = loop {
            line.clear();
            let n = lines
                .read_line(&mut line)
                .map_err(|e| Error::io("read the server's output", e))?;
            if n == 0 {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Server("the server ended before listening".into()));
            }
            if let Some((_, url)) = line.trim().split_once("listening ") {
                let url = url.trim_start_matches("on ").trim_start_matches("http://");
                break url
                    .trim_end_matches("/mcp")
                    .trim_end_matches('/')
                    .to_owned();
            }
        };
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
        Ok(Server { child, addr })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads more of the connection into `buf`; an error when the peer closed it.
async fn fill(s: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let mut chunk = [0u8; 16384];
    let n = s.read(&mut chunk).await?;
    if n == 0 {
        return Err(std::io::Error::other("closed mid-response"));
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// Reads one HTTP/1.1 response (2xx), its body sized by `content-length` or sent chunked (an
/// event stream, read to its end); returns its head (lower case) and body. Hand-written: a few lines that cost every server the same, with no HTTP client's own
/// pooling or buffering in between.
pub async fn read_response(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> std::io::Result<(String, Vec<u8>)> {
    let end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        fill(s, buf).await?;
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    if !head.starts_with("http/1.1 2") {
        return Err(std::io::Error::other(format!("answered {head}")));
    }
    buf.drain(..end + 4);
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
    };
    if let Some(len) = header("content-length:").and_then(|v| v.parse::<usize>().ok()) {
        while buf.len() < len {
            fill(s, buf).await?;
        }
        let body = buf.drain(..len).collect();
        return Ok((head, body));
    }
    if header("transfer-encoding:").as_deref() != Some("chunked") {
        return Err(std::io::Error::other(format!("no body length in {head}")));
    }
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(i) = buf.windows(2).position(|w| w == b"\r\n") {
                break i;
            }
            fill(s, buf).await?;
        };
        let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| std::io::Error::other(format!("chunk size {size_text:?}")))?;
        while buf.len() < line_end + 2 + size + 2 {
            fill(s, buf).await?;
        }
        body.extend_from_slice(&buf[line_end + 2..line_end + 2 + size]);
        buf.drain(..line_end + 2 + size + 2);
        if size == 0 {
            return Ok((head, body));
        }
    }
}

/// The Python of the interop virtual environment `venv` (`.ci/install/*-interop.sh`, under
/// `RPCWIRE_INTEROP_DIR`, else `~/.cache/rpcwire-interop`), when it can import `imports`.
pub fn interop_python(venv: &str, imports: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("RPCWIRE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/rpcwire-interop")
        });
    let p = dir.join(venv).join("venv/bin/python");
    let ready = Command::new(&p)
        .args(["-c", imports])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|st| st.success());
    ready.then_some(p)
}
