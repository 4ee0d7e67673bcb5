//! `Firmware::driver`: a firmware handler written against the rpcwire-embedded-io driver (a
//! typed dispatch table with side effects) run as written, over 2 000 cases, each side effect
//! counted once per request; and a handler that runs a side effect twice is caught.

use std::cell::RefCell;
use std::rc::Rc;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use rpcwire::Config;
use rpcwire_embedded_io::embedded_io::Write;
use rpcwire_embedded_io::methods::{MethodError, MethodList, Methods, NoParams};
use rpcwire_embedded_io::{Context, Incoming, Inline};
use rpcwire_testkit::strategy::{self, method, method_any};
use rpcwire_testkit::{Case, Firmware, Frame, Message};
use serde_json::json;

/// The firmware's storage: 1 KiB transmit buffer, 960 B of batch replies, four slots each.
type Store = Inline<1024, 960, 4, 4>;

/// The device: its LED and the log of its `bump` side effects (the nonces it was called with).
#[derive(Default)]
struct Device {
    led: bool,
    bumped: Vec<u32>,
}

/// The firmware's methods, as it writes them.
fn methods() -> Methods<Device, impl MethodList<Device>> {
    Methods::new()
        .method("led.set", |d: &mut Device, (on,): (bool,)| {
            d.led = on;
            Ok(on)
        })
        .method("add", |_: &mut Device, (a, b): (i32, i32)| {
            a.checked_add(b).ok_or(MethodError::INVALID_PARAMS)
        })
        .method("bump", |d: &mut Device, (nonce,): (u32,)| {
            d.bumped.push(nonce);
            Ok(nonce)
        })
        .method("status", |d: &mut Device, _: NoParams| Ok(d.led))
}

/// The firmware's handler, as it writes it: generic over the UART, so that the harness runs
/// the very code the firmware runs.
fn handle<IO: Write, L: MethodList<Device>>(
    table: &mut Methods<Device, L>,
    device: &mut Device,
    ctx: &mut Context<'_, IO, Store>,
    item: Incoming<'_>,
) {
    table.dispatch(device, ctx, item);
}

/// How many `bump` calls with params that decode the driver handed the handler (requests and
/// notifications alike: each must run the side effect once).
fn bump_delivered(item: &Incoming<'_>) -> bool {
    let (method, params) = match item {
        Incoming::Request(r) => (r.method, r.params),
        Incoming::Notification(n) => (n.method, n.params),
        _ => return false,
    };
    method.eq_str("bump")
        && params.is_some_and(|p| serde_json::from_str::<(u32,)>(p.as_str()).is_ok())
}

fn device_methods() -> Vec<strategy::Method> {
    vec![
        method("led.set", any::<bool>().prop_map(|on| json!([on]))),
        method_any("led.set"),
        method("add", strategy::int_pair()),
        method(
            "add",
            (any::<i32>(), any::<i32>()).prop_map(|(a, b)| json!([a, b])),
        ),
        method("bump", any::<u32>().prop_map(|n| json!([n]))),
        method_any("bump"),
        method_any("status"),
    ]
}

/// Runs `cases` cases of `strategy` through `check`, deterministically.
fn run(cases: u32, check: impl Fn(&Case) -> Result<(), String>) {
    let config = RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let result = runner.run(&strategy::case(device_methods()), |case| {
        check(&case).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn the_drivers_handler_passes_2_000_cases_with_side_effects_once_per_request() {
    let device = Rc::new(RefCell::new(Device::default()));
    let delivered = Rc::new(RefCell::new(0usize));
    let mut table = methods();
    let fw: Firmware<_, Store> = Firmware::driver(Config::default(), {
        let (device, delivered) = (device.clone(), delivered.clone());
        move |ctx, item| {
            *delivered.borrow_mut() += usize::from(bump_delivered(&item));
            handle(&mut table, &mut device.borrow_mut(), ctx, item);
        }
    });
    let checked = RefCell::new((0usize, 0usize));
    run(2_000, |case| {
        device.borrow_mut().bumped.clear();
        *delivered.borrow_mut() = 0;
        fw.check(case).map_err(|v| v.to_string())?;
        let effects = device.borrow().bumped.len();
        let calls = *delivered.borrow();
        if effects != calls {
            return Err(format!(
                "{effects} bump side effects for {calls} bump calls"
            ));
        }
        let mut c = checked.borrow_mut();
        c.0 += 1;
        c.1 += calls;
        Ok(())
    });
    let (cases, bumps) = *checked.borrow();
    println!("firmware harness: {cases} cases, {bumps} bump calls, each run once");
    assert!(cases >= 2_000, "{cases} cases");
    assert!(bumps > 1_000, "the cases call bump often enough: {bumps}");
}

/// The check can fail: a handler that runs its side effect inside the retried command (the
/// answer waits for transmit room behind a notification the handler sent first) runs it twice
/// for one request, and the counting above sees it.
#[test]
fn a_side_effect_run_twice_is_caught() {
    type Small = Inline<256, 128, 2, 2>;
    let bumps = Rc::new(RefCell::new(0usize));
    let fw: Firmware<_, Small, 512> = Firmware::driver(Config::default(), {
        let bumps = bumps.clone();
        move |ctx: &mut Context<'_, _, Small>, item| {
            if let Incoming::Request(req) = item {
                let _ = ctx.send_notification("log", Some(&["x".repeat(200)]));
                let _ = ctx.retry(|conn| {
                    *bumps.borrow_mut() += 1; // wrong: runs again on every retry
                    conn.respond(req.handle, &1)
                });
            }
        }
    });
    let case = Case::new(vec![Frame::Single(Message::request("bump", json!([7]), 1))]);
    assert_eq!(fw.check(&case), Ok(()), "the exchange itself is valid");
    assert_eq!(*bumps.borrow(), 2, "one request, two side effects: caught");
}
