//! Running third-party programs in interop tests: where the `.ci/install/*-interop.sh`
//! scripts put their SDKs, bounded runs of client scripts, and servers started as child
//! processes that print the address they serve.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where `.ci/install/<name>-interop.sh` installs: `$RPCWIRE_INTEROP_DIR/<name>`, else
/// `~/.cache/rpcwire-interop/<name>`.
pub fn interop_dir(name: &str) -> PathBuf {
    std::env::var_os("RPCWIRE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/rpcwire-interop")
        })
        .join(name)
}

/// The Python of the virtualenv at `<interop_dir(name)>/venv` when `import module` works
/// there; otherwise `None` after [`crate::skip`] (a failure under `CI=true`).
pub fn venv_python(name: &str, module: &str) -> Option<PathBuf> {
    let python = interop_dir(name).join("venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(python)
    } else {
        crate::skip(&format!(
            "Python module {module} is not installed (.ci/install/{name}-interop.sh)"
        ));
        None
    }
}

/// `<interop_dir(name)>/node` when `node` runs and `node_modules/<package>` is there;
/// otherwise `None` after [`crate::skip`].
pub fn node_modules(name: &str, package: &str) -> Option<PathBuf> {
    let dir = interop_dir(name).join("node");
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if node
        && dir
            .join("node_modules")
            .join(package)
            .join("package.json")
            .exists()
    {
        Some(dir)
    } else {
        crate::skip(&format!(
            "node or npm {package} is not installed (.ci/install/{name}-interop.sh)"
        ));
        None
    }
}

fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

/// Runs a command to its end, killing it (and panicking with its output) after `limit`.
///
/// # Panics
/// When it cannot start or outlives `limit`.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = drain(child.stdout.take().expect("stdout"));
    let err = drain(child.stderr.take().expect("stderr"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "timed out after {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.join().unwrap_or_default()),
                String::from_utf8_lossy(&err.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Asserts a script exited 0 having printed the line `last_line`, showing its output if not.
///
/// # Panics
/// When it did not.
pub fn assert_passed(out: &Output, last_line: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.lines().any(|l| l == last_line),
        "status {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    println!("{stdout}");
}

/// A server run as a child process, killed on drop, whose stdout's first line was
/// `<prefix><address>`; its stderr is collected.
pub struct Server {
    child: Child,
    /// What followed the prefix on the first line (a URL, say).
    pub address: String,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Server {
    /// Starts `cmd` and waits (at most `limit`) for a first stdout line starting with
    /// `prefix`.
    ///
    /// # Panics
    /// When it cannot start or prints no such line in time.
    pub fn start(cmd: &mut Command, prefix: &str, limit: Duration) -> Server {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the server");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stderr);
        let mut err = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(&buf[..n]);
            }
        });
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            // Keep reading so the child never blocks on a full pipe.
            for _ in lines {}
        });
        let first = match rx.recv_timeout(limit) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server printed no first line in {limit:?}");
            }
        };
        let address = first
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("first line {first:?} does not start with {prefix:?}"))
            .trim()
            .to_owned();
        Server {
            child,
            address,
            stderr,
        }
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
