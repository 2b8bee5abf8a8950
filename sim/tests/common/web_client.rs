//! A room served in this process on a free loopback port, and the two kinds of client the
//! browser edition has: a participant (their cookie, as a browser context keeps it) and the
//! presenter (their secret as a bearer token). For the tests of the room's screens and the
//! presenter's page; each answer is its status and its JSON. A test binary includes
//! `common/web_server.rs` as `web_server` beside it.
#![allow(dead_code)] // Each test binary uses part of it.

use reqwest::header::{AUTHORIZATION, COOKIE, SET_COOKIE};
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use twice_sim::web::{self, Catalogue, WebConfig, WebState};

use crate::web_server::levels_folder;

/// A room served until the test ends (its task ends with the test's runtime).
pub struct Room {
    pub base: String,
    pub secret: String,
    pub state: WebState,
}

/// A room as `configure` sets it up (a room file when it names one), on a free port.
pub async fn room_with(configure: impl FnOnce(&mut WebConfig)) -> Room {
    let catalogue = Catalogue::load(&levels_folder()).expect("the campaign loads");
    let mut config = WebConfig::new().expect("a presenter secret");
    configure(&mut config);
    let state = WebState::open(catalogue, &mut config).expect("the room opens");
    let listener = web::bind("127.0.0.1:0".parse().unwrap(), false)
        .await
        .expect("a free port");
    let address = listener.local_addr().unwrap();
    tokio::spawn(web::serve_until(listener, state.clone(), std::future::pending::<()>()));
    Room {
        base: format!("http://{address}"),
        secret: config.presenter_secret,
        state,
    }
}

async fn answer(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.expect("the room answers");
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// One participant's browser.
#[derive(Clone)]
pub struct Participant {
    client: Client,
    base: String,
    cookie: Option<String>,
}

impl Participant {
    pub fn new(base: &str) -> Participant {
        Participant {
            client: Client::new(),
            base: base.to_owned(),
            cookie: None,
        }
    }

    /// A participant who joined as `name`.
    pub async fn joined(base: &str, name: &str) -> Participant {
        let mut participant = Participant::new(base);
        let (status, me) = participant.join(name, None).await;
        assert_eq!(status, StatusCode::OK, "{me}");
        participant
    }

    pub async fn join(&mut self, name: &str, code: Option<&str>) -> (StatusCode, Value) {
        let mut body = json!({ "name": name });
        if let Some(code) = code {
            body["code"] = json!(code);
        }
        let response = self
            .request(Method::POST, "/api/join")
            .json(&body)
            .send()
            .await
            .unwrap();
        if let Some(cookie) = response.headers().get(SET_COOKIE) {
            self.cookie = Some(cookie.to_str().unwrap().split(';').next().unwrap().to_owned());
        }
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    /// Takes the cookie a presenter's request set (the stage).
    pub fn with_cookie(base: &str, cookie: String) -> Participant {
        Participant {
            client: Client::new(),
            base: base.to_owned(),
            cookie: Some(cookie),
        }
    }

    /// The same browser, its server started again at another address.
    pub fn moved_to(&self, base: &str) -> Participant {
        Participant {
            base: base.to_owned(),
            ..self.clone()
        }
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.client.request(method, format!("{}{path}", self.base));
        match &self.cookie {
            Some(cookie) => request.header(COOKIE, cookie),
            None => request,
        }
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        answer(self.request(Method::GET, path)).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        answer(self.request(Method::POST, path).json(&body)).await
    }

    /// A request that must succeed; its answer.
    pub async fn ok(&self, path: &str, body: Value) -> Value {
        let (status, answer) = self.post(path, body).await;
        assert_eq!(status, StatusCode::OK, "POST {path}: {answer}");
        answer
    }
}

/// The presenter: every request carries the room's secret.
pub struct Presenter {
    client: Client,
    base: String,
    secret: String,
}

impl Presenter {
    pub fn of(room: &Room) -> Presenter {
        Presenter::at(&room.base, &room.secret)
    }

    pub fn at(base: &str, secret: &str) -> Presenter {
        Presenter {
            client: Client::new(),
            base: base.to_owned(),
            secret: secret.to_owned(),
        }
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .header(AUTHORIZATION, format!("Bearer {}", self.secret))
    }

    pub async fn get(&self, path: &str) -> Value {
        let (status, body) = answer(self.request(Method::GET, path)).await;
        assert_eq!(status, StatusCode::OK, "GET {path}: {body}");
        body
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        answer(self.request(Method::POST, path).json(&body)).await
    }

    /// `POST` whose answer sets a cookie (the stage): the cookie and the answer.
    pub async fn post_for_cookie(&self, path: &str) -> (String, Value) {
        let response = self.request(Method::POST, path).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let cookie = response.headers()[SET_COOKIE]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        (cookie, response.json().await.unwrap())
    }
}
