//! Writes the seed corpus of `router_bytes` (`seeds/router_bytes/`) and its dictionary
//! (`router_bytes.dict`) from the router in `src/lib.rs`: valid calls to every method, with
//! the documented params, and the method and param names. Run it again after changing the
//! router: `cargo run --example seeds` (from this folder).

use std::path::Path;

fn main() -> std::io::Result<()> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = rpcwire_testkit::seeds::FuzzSeeds::from_router(&rpcwire_fuzz_template::router());
    let n = seeds.write(
        &here.join("seeds/router_bytes"),
        &here.join("router_bytes.dict"),
    )?;
    println!("{n} seeds in seeds/router_bytes, dictionary in router_bytes.dict");
    Ok(())
}
