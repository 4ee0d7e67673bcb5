// id 0: add([1000,0]) should answer result 1000, got {"jsonrpc":"2.0","result":1001,"id":0}
// Found with RPCWIRE_TESTKIT_SEED=0.
#[test]
fn regression_add() {
    use rpcwire_testkit::{Case, Frame, Message};
    use serde_json::json;
    let case = Case::new(vec![
        Frame::Single(Message::request("add", json!([1000, 0]), 0)),
    ]);
    assert_eq!(harness().check(&case), Ok(()));
}
