//! The billing server's emails, owner changes and deletes: each request does what the world's
//! `Billing::send_email/change_owner/delete_record` does with its `Idempotency-Key` (honour,
//! metadata-only, ignore), answers with the status its outcome calls for, is found by the
//! reconcile hook's lookup, and survives a restart (the file replays it).

use serde_json::{Value, json};
use twice_drill::billing_server::{EffectLookup, InProcessBilling, NOW_HEADER, RecordsView};
use twice_drill::billing_store::BillingStore;
use twice_drill::script;
use twice_world::billing::{Answer, KeyHandling, Terms};

const ACCOUNT: &str = "acct_ada";

struct Billing {
    server: InProcessBilling,
    client: reqwest::Client,
    base: String,
}

impl Billing {
    async fn start(db: &std::path::Path, keys: KeyHandling) -> Billing {
        let server = InProcessBilling::start(db, keys, Terms::default(), &script::accounts())
            .await
            .expect("billing starts");
        let base = format!("http://{}", server.address());
        Billing {
            server,
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            base,
        }
    }

    /// Sends one request at level time `now_ms`; returns the status and the body.
    async fn send(&self, method: reqwest::Method, path: &str, key: Option<&str>, body: Value) -> (u16, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header(NOW_HEADER, "1000")
            .json(&body);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        let response = request.send().await.expect("billing answers");
        let status = response.status().as_u16();
        (status, response.json().await.expect("a JSON body"))
    }

    async fn email(&self, key: Option<&str>) -> (u16, Value) {
        let body = json!({"account": ACCOUNT, "subject": "Your refund", "intent": "run-0001/0"});
        self.send(reqwest::Method::POST, "/v1/emails", key, body).await
    }

    async fn owner(&self, key: Option<&str>, owner: &str, intent: &str) -> (u16, Value) {
        let body = json!({"owner": owner, "intent": intent});
        let path = format!("/v1/accounts/{ACCOUNT}/owner");
        self.send(reqwest::Method::PUT, &path, key, body).await
    }

    async fn delete(&self, key: Option<&str>) -> (u16, Value) {
        let body = json!({"intent": "run-0001/0", "reason": "closed"});
        let path = format!("/v1/records/{ACCOUNT}");
        self.send(reqwest::Method::DELETE, &path, key, body).await
    }

    async fn records(&self) -> RecordsView {
        let response = self
            .client
            .get(format!("{}/v1/records", self.base))
            .send()
            .await
            .unwrap();
        response.json().await.expect("the records")
    }

    async fn effect(&self, key: &str) -> (u16, Option<EffectLookup>) {
        let url = format!("{}/v1/effects?idempotency_key={key}", self.base);
        let response = self.client.get(url).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.ok())
    }
}

fn answer(body: &Value) -> Answer {
    serde_json::from_value(body.clone()).unwrap_or_else(|error| panic!("{body} is not an answer: {error}"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_resent_email_is_one_email_where_billing_honours_the_key_and_two_where_it_ignores_it() {
    let directory = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let honouring = Billing::start(&directory.path().join("honour.sqlite"), KeyHandling::Honour).await;
        let (first, body) = honouring.email(Some("run-0001:c1")).await;
        assert_eq!(first, 201, "{body}");
        assert!(matches!(answer(&body), Answer::Emailed { .. }), "{body}");
        let (again, body) = honouring.email(Some("run-0001:c1")).await;
        assert_eq!(again, 200, "{body}");
        assert!(
            matches!(answer(&body), Answer::Repeat { ref credit_id, .. } if credit_id == "em_0001"),
            "{body}"
        );
        assert_eq!(honouring.records().await.outbox.len(), 1);
        let (found, lookup) = honouring.effect("run-0001:c1").await;
        assert_eq!(found, 200);
        assert!(lookup.expect("a lookup").effect.is_some());
        let (missing, lookup) = honouring.effect("run-0001:c9").await;
        assert_eq!(missing, 404);
        assert_eq!(lookup.expect("a lookup").effect, None);
        honouring.server.stop().await;

        let ignoring = Billing::start(&directory.path().join("ignore.sqlite"), KeyHandling::Ignore).await;
        assert_eq!(ignoring.email(Some("run-0001:c1")).await.0, 201);
        assert_eq!(ignoring.email(Some("run-0001:c1")).await.0, 201, "a second email");
        assert_eq!(ignoring.records().await.outbox.len(), 2);
        assert_eq!(
            ignoring.effect("run-0001:c1").await.0,
            422,
            "no keys kept: it cannot tell"
        );
        ignoring.server.stop().await;
    });
}

#[test]
fn a_retried_owner_change_after_someone_elses_undoes_it_unless_the_key_is_honoured() {
    let directory = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        for (keys, file, owner_at_end) in [
            (KeyHandling::MetadataOnly, "metadata.sqlite", "Ada Lovelace"),
            (KeyHandling::Honour, "honour.sqlite", "Grace"),
        ] {
            let billing = Billing::start(&directory.path().join(file), keys).await;
            let (status, body) = billing.owner(Some("run-0001:c1"), "Ada Lovelace", "run-0001/0").await;
            assert_eq!(status, 200, "{body}");
            assert!(matches!(answer(&body), Answer::OwnerSet { .. }), "{body}");
            let (status, body) = billing.owner(None, "Grace", "support").await;
            assert_eq!(status, 200, "someone else's change: {body}");
            let (status, body) = billing.owner(Some("run-0001:c1"), "Ada Lovelace", "run-0001/0").await;
            assert_eq!(status, 200, "{body}");
            let records = billing.records().await;
            assert_eq!(records.owners[ACCOUNT], owner_at_end, "{keys:?}: {records:?}");
            billing.server.stop().await;
        }
    });
}

#[test]
fn a_second_delete_answers_not_found_unless_the_key_is_honoured() {
    let directory = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let billing = Billing::start(&directory.path().join("metadata.sqlite"), KeyHandling::MetadataOnly).await;
        let (status, body) = billing.delete(Some("run-0001:c1")).await;
        assert_eq!(status, 200, "{body}");
        assert!(matches!(answer(&body), Answer::Deleted { .. }), "{body}");
        let (status, body) = billing.delete(Some("run-0001:c1")).await;
        assert_eq!(status, 404, "{body}");
        assert!(
            matches!(answer(&body), Answer::Rejected { ref reason } if reason.starts_with("not found")),
            "{body}"
        );
        billing.server.stop().await;

        let honouring = Billing::start(&directory.path().join("honour.sqlite"), KeyHandling::Honour).await;
        assert_eq!(honouring.delete(Some("run-0001:c1")).await.0, 200);
        let (status, body) = honouring.delete(Some("run-0001:c1")).await;
        assert_eq!(status, 200, "{body}");
        assert!(matches!(answer(&body), Answer::Repeat { .. }), "{body}");
        assert_eq!(honouring.records().await.deletions.len(), 1);
        honouring.server.stop().await;
    });
}

#[test]
fn bad_requests_are_refused_with_what_is_wrong() {
    let directory = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let billing = Billing::start(&directory.path().join("billing.sqlite"), KeyHandling::Honour).await;
        let path = "/v1/accounts/acct_nobody/owner";
        let (status, body) = billing
            .send(reqwest::Method::PUT, path, None, json!({"owner": "X", "intent": "r/0"}))
            .await;
        assert_eq!(status, 404, "{body}");
        assert!(body.to_string().contains("no account `acct_nobody`"), "{body}");
        let (status, body) = billing
            .send(reqwest::Method::POST, "/v1/emails", None, json!({"account": ACCOUNT}))
            .await;
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains("the body is not an email"), "{body}");
        let (status, body) = billing.email(Some("no key here")).await;
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains("Idempotency-Key"), "{body}");
        let (status, body) = billing.owner(None, " ", "r/0").await;
        assert_eq!(status, 422, "{body}");
        assert!(body.to_string().contains("`owner`"), "{body}");
        assert!(
            billing.records().await.owner_changes.is_empty(),
            "nothing refused is recorded"
        );
        billing.server.stop().await;
    });
}

#[test]
fn records_survive_a_restart_and_keys_are_still_honoured() {
    let directory = tempfile::tempdir().unwrap();
    let db = directory.path().join("billing.sqlite");
    runtime().block_on(async {
        let billing = Billing::start(&db, KeyHandling::Honour).await;
        billing.email(Some("run-0001:c1")).await;
        billing.owner(Some("run-0001:c2"), "Ada Lovelace", "run-0001/1").await;
        billing.delete(Some("run-0001:c3")).await;
        let before = billing.records().await;
        billing.server.stop().await;

        let (_, replayed) = BillingStore::open_existing(&db).expect("the file replays");
        assert_eq!(replayed.records.outbox, before.outbox);
        assert_eq!(replayed.records.owner_changes, before.owner_changes);
        assert_eq!(replayed.records.deletions, before.deletions);

        let again = Billing::start(&db, KeyHandling::Honour).await;
        let (status, body) = again.email(Some("run-0001:c1")).await;
        assert_eq!(status, 200, "the key is still honoured after a restart: {body}");
        assert_eq!(again.records().await.outbox.len(), 1);
        again.server.stop().await;
    });
}
