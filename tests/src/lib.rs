//! Helpers shared by rpcwire's integration suites (in `tests/`).

pub mod brokers;
pub mod interop;
#[cfg(feature = "oauth")]
pub mod oauth;
pub mod otlp;
#[cfg(feature = "tls")]
pub mod pki;
pub mod postgres;
#[cfg(feature = "raw-http")]
pub mod raw_http;
#[cfg(feature = "spans")]
pub mod spans;
#[cfg(feature = "tls")]
pub mod tls;

use rpcwire::wire::RxBuffer;
use rpcwire::Input;
use rpcwire::{Connection, Instant, Output};

/// Feeds `bytes` into a server-role connection running the demo service and returns every
/// byte it transmits in answer.
pub fn serve_bytes<const N: usize>(
    conn: &mut Connection,
    rx: &mut RxBuffer<[u8; N]>,
    bytes: &[u8],
) -> Vec<u8> {
    let mut input = bytes;
    let mut out = Vec::new();
    loop {
        while let Input::Item(item) = conn.handle_input(Instant::ZERO, rx, &mut input) {
            rpcwire_demo::handle(conn, item).expect("demo answers fit");
        }
        drain(conn, &mut out);
        if input.is_empty() && !conn.is_input_blocked() {
            return out;
        }
    }
}

/// Moves everything the connection wants to transmit into `out`.
pub fn drain(conn: &mut Connection, out: &mut Vec<u8>) {
    while let Output::Transmit(bytes) = conn.poll_output() {
        out.extend_from_slice(bytes);
        let n = bytes.len();
        conn.advance_transmit(n);
    }
}

/// What the connection has queued to transmit now (one poll), as text, marked written.
pub fn sent<S: rpcwire::storage::Storage>(conn: &mut Connection<S>) -> String {
    let bytes = conn.poll_transmit().to_vec();
    conn.advance_transmit(bytes.len());
    String::from_utf8(bytes).expect("UTF-8 output")
}

/// Parses a JSON value, sorting the elements of a top-level array so that batch replies
/// compare as sets.
pub fn normalize(text: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
    if let serde_json::Value::Array(items) = &mut v {
        items.sort_by_key(|i| i.to_string());
    }
    v
}

/// Splits content-length frames into their bodies.
pub fn content_length_bodies(mut bytes: &[u8]) -> Vec<String> {
    let mut bodies = Vec::new();
    while !bytes.is_empty() {
        let text = std::str::from_utf8(bytes).expect("utf-8");
        let header_end = text.find("\r\n\r\n").expect("header terminator");
        let len: usize = text[..header_end]
            .strip_prefix("Content-Length: ")
            .expect("content-length header")
            .parse()
            .expect("length");
        let body = &bytes[header_end + 4..header_end + 4 + len];
        bodies.push(String::from_utf8(body.to_vec()).expect("utf-8"));
        bytes = &bytes[header_end + 4 + len..];
    }
    bodies
}

/// Skips a test that needs something this machine lacks: prints `SKIPPED: <why>` straight to
/// the process's stderr (past the test harness's capture, so it is visible in a normal run),
/// and fails instead under `CI=true`, where nothing may be skipped.
pub fn skip(why: &str) {
    use std::io::Write;
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true and a test would be skipped: {why}"
    );
    let _ = std::io::stderr().write_all(format!("SKIPPED: {why}\n").as_bytes());
}

/// A socat pseudo-terminal pair acting as a serial line, for serial tests.
pub mod pty {
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};

    /// A running socat joining two pseudo-terminals; killed on drop.
    pub struct Socat {
        child: Child,
        /// The two device paths.
        pub ends: (String, String),
    }

    impl Drop for Socat {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Starts `socat pty,raw,echo=0 pty,raw,echo=0`; `None` (after [`super::skip`]) when
    /// socat is not installed.
    pub fn socat_pair() -> Option<Socat> {
        let found = Command::new("socat")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if found.is_err() {
            super::skip("socat not found (apt-get install socat; .ci/install/embedded.sh)");
            return None;
        }
        let mut child = Command::new("socat")
            .args(["-d", "-d", "pty,raw,echo=0", "pty,raw,echo=0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn socat");
        let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        let mut ends = Vec::new();
        while ends.len() < 2 {
            let line = lines
                .next()
                .expect("socat names its ptys")
                .expect("read socat's stderr");
            if let Some(path) = line.split("PTY is ").nth(1) {
                ends.push(path.trim().to_owned());
            }
        }
        // Keep draining socat's diagnostics so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Some(Socat {
            child,
            ends: (ends[0].clone(), ends[1].clone()),
        })
    }
}

/// A child process, killed and reaped on drop (a test that fails leaves nothing running).
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The firmware images of `examples/firmware` on qemu's `lm3s6965evb` board, for the tests
/// that run them (`firmware_qemu`, the CLI's `firmware_mcp`).
pub mod firmware {
    use std::net::{TcpListener, TcpStream};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use super::Killed;

    /// A firmware image: the folder of its own cargo workspace under `examples/`, its binary,
    /// its target and the qemu board that runs it.
    #[derive(Debug, Clone, Copy)]
    pub struct Image {
        /// The workspace's folder under `examples/`.
        pub dir: &'static str,
        /// The binary.
        pub bin: &'static str,
        /// The rustup target it is built for.
        pub target: &'static str,
        /// `qemu-system-arm -M` board.
        pub machine: &'static str,
    }

    /// The Cortex-M0 image (`examples/firmware-m0`, qemu `microbit`).
    pub const M0: Image = Image {
        dir: "firmware-m0",
        bin: "rpcwire-firmware-m0",
        target: "thumbv6m-none-eabi",
        machine: "microbit",
    };

    /// The embassy image (`examples/firmware-embassy`, Cortex-M4F, qemu `mps2-an386`).
    pub const EMBASSY: Image = Image {
        dir: "firmware-embassy",
        bin: "rpcwire-firmware-embassy",
        target: "thumbv7em-none-eabihf",
        machine: "mps2-an386",
    };

    /// The typed-methods image beside it (blocking driver, same board).
    pub const TYPED: Image = Image {
        dir: "firmware-embassy",
        bin: "rpcwire-firmware-typed",
        target: "thumbv7em-none-eabihf",
        machine: "mps2-an386",
    };

    /// Records a figure a test measured (a stack high-water mark) in the workspace's
    /// `target/figures/NAME`, where .ci/after/firmware.sh reports it from without running the
    /// test a second time. Best effort: a figure that cannot be written is only printed.
    pub fn record_figure(name: &str, value: u64) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/figures");
        if let Err(e) = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join(name), value.to_string()))
        {
            println!("could not record {name}: {e}");
        }
    }

    /// The firmware's folder (its own workspace).
    pub fn dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/firmware")
    }

    /// Builds the firmware binary `bin` of `examples/firmware` in release (into
    /// `examples/firmware/target`) and returns its ELF; `None` (after [`super::skip`]) when
    /// the thumbv7m-none-eabi target is not installed. A build failure panics.
    pub fn build(bin: &str) -> Option<PathBuf> {
        build_in("firmware", bin, "thumbv7m-none-eabi")
    }

    /// Builds `image` in release (into its workspace's `target/`) and returns its ELF; `None`
    /// (after [`super::skip`]) when its target is not installed. A build failure panics.
    pub fn build_image(image: &Image) -> Option<PathBuf> {
        build_in(image.dir, image.bin, image.target)
    }

    fn build_in(dir: &str, bin: &str, target: &str) -> Option<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples")
            .join(dir);
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let output = Command::new(cargo)
            .args(["build", "--release", "--quiet", "--bin", bin])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", dir.join("target"))
            .env_remove("RUSTFLAGS")
            .output()
            .expect("run cargo");
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            if stderr.contains("target may not be installed") {
                super::skip(&format!(
                    "the {target} target is not installed (.ci/install/embedded.sh)"
                ));
                return None;
            }
            panic!("firmware build failed:\n{stderr}");
        }
        Some(dir.join("target").join(target).join("release").join(bin))
    }

    /// Whether `qemu-system-arm` runs here ([`super::skip`] when not).
    pub fn have_qemu() -> bool {
        let found = Command::new("qemu-system-arm")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            super::skip("qemu-system-arm not found (.ci/install/embedded.sh)");
        }
        found
    }

    /// The qemu command running `elf` on the `lm3s6965evb` board with these serial arguments
    /// (`-serial ...`).
    pub fn qemu(elf: &Path, serial: &[&str]) -> Command {
        qemu_on("lm3s6965evb", elf, serial)
    }

    /// The qemu command running `elf` on `machine` with these serial arguments.
    pub fn qemu_on(machine: &str, elf: &Path, serial: &[&str]) -> Command {
        let mut cmd = Command::new("qemu-system-arm");
        cmd.args(["-M", machine, "-nographic", "-monitor", "none"])
            .args(serial)
            .arg("-kernel")
            .arg(elf)
            .stdin(Stdio::null());
        cmd
    }

    /// Starts `elf` on the `lm3s6965evb` board with UART0 on a TCP socket qemu listens on, and
    /// connects to it: qemu waits for the connection before running the guest, so nothing the
    /// device sends is lost.
    pub fn start_on_socket(elf: &Path) -> (Killed, TcpStream) {
        start_on_socket_of("lm3s6965evb", elf)
    }

    /// [`start_on_socket`] on `machine` (its first UART on the socket).
    pub fn start_on_socket_of(machine: &str, elf: &Path) -> (Killed, TcpStream) {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let chardev = format!("socket,id=uart0,host=127.0.0.1,port={port},server=on,wait=on");
        let child = qemu_on(
            machine,
            elf,
            &["-chardev", &chardev, "-serial", "chardev:uart0"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn qemu");
        let guard = Killed(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        let stream = loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => break s,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("qemu's serial socket: {e}"),
            }
        };
        stream.set_nodelay(true).expect("nodelay");
        (guard, stream)
    }
}

/// nginx (Debian package) as a load balancer in front of test servers, and a raw HTTP/1.1
/// POST that reads which upstream answered.
pub mod nginx {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    /// The nginx binary, if installed.
    pub fn find() -> Option<PathBuf> {
        ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
    }

    /// nginx in the foreground from a temporary prefix; stopped with SIGQUIT (then killed),
    /// and its folder removed, on drop.
    pub struct Nginx {
        child: Child,
        dir: PathBuf,
        /// `127.0.0.1:PORT`, where it listens.
        pub front: String,
    }

    impl Drop for Nginx {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .args(["-QUIT", &self.child.id().to_string()])
                .status();
            let mut ended = false;
            for _ in 0..50 {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    ended = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if !ended {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// Starts `nginx` with `http` as the body of its `http { }` block (upstreams and a server
    /// that listens on `127.0.0.1:{port}`, given the free port), in a folder named after `tag`
    /// and this process; returns once it accepts connections. Start the upstreams first: one
    /// probed before it listens is marked down for 10 s.
    pub fn start(nginx: &Path, tag: &str, http: impl FnOnce(u16) -> String) -> Nginx {
        let dir = std::env::temp_dir().join(format!("rpcwire-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("nginx folder");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{ worker_connections 512; }}\nhttp {{\n    access_log off;\n    \
             client_body_temp_path {d}/body;\n    proxy_temp_path {d}/proxy;\n    \
             fastcgi_temp_path {d}/fastcgi;\n    uwsgi_temp_path {d}/uwsgi;\n    \
             scgi_temp_path {d}/scgi;\n\n{}}}\n",
            http(port)
        );
        std::fs::write(dir.join("nginx.conf"), conf).expect("nginx.conf");
        let child = Command::new(nginx)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-p")
            .arg(&dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn nginx");
        let front = format!("127.0.0.1:{port}");
        let guard = Nginx {
            child,
            dir: dir.clone(),
            front,
        };
        for _ in 0..250 {
            if TcpStream::connect(&guard.front).is_ok() {
                return guard;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "nginx did not start: {:?}",
            std::fs::read_to_string(dir.join("error.log"))
        );
    }

    /// One HTTP/1.1 POST written by hand (`Connection: close`, with these extra header
    /// lines): (status, the `X-Upstream` header, body).
    pub fn post(
        front: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String, String) {
        let mut stream = TcpStream::connect(front).expect("connect to nginx");
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        stream.write_all(head.as_bytes()).expect("write");
        stream.write_all(body.as_bytes()).expect("write");
        let mut all = Vec::new();
        stream.read_to_end(&mut all).expect("read");
        let text = String::from_utf8(all).expect("UTF-8 answer");
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status");
        let upstream = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("x-upstream: ")
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        (status, upstream, body.to_owned())
    }
}
