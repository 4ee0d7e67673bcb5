// id 0: incr(["a",0]) should answer result 1, got [{"jsonrpc":"2.0","result":1,"id":0},{"jsonrpc":"2.0","result":0,"id":0}]
// Found with RPCWIRE_TESTKIT_SEED=0.
#[test]
fn regression_incr() {
    use rpcwire_testkit::{Case, Frame, Message};
    use serde_json::json;
    let case = Case::new(vec![
        Frame::Batch(vec![Message::request("incr", json!(["a", 1]), 0), Message::request("incr", json!(["a", 0]), 0)]),
    ]);
    assert_eq!(harness().check(&case), Ok(()));
}
