"""Word lists the entity rules (memory.knowledge.rules) read a name's kind from, and the tokens that are never
names. General lists, not a palace's lexicon: well-known software, places, given names, organisation suffixes, and
the acronyms and codes team notes are full of (time zones, quarters, percentiles, units). A name missing here
still counts as a mention (kind `other`); a known name of a palace is matched by its own lexicon anyway.
Everything is casefolded."""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Software, services and products a team note names: tools.
TOOLS = _words(
    """postgres postgresql mysql mariadb sqlite redis valkey memcached mongodb cassandra scylladb dynamodb couchdb
    elasticsearch opensearch solr kibana logstash grafana prometheus loki tempo jaeger zipkin datadog newrelic
    splunk sentry honeycomb pagerduty opsgenie statuspage zabbix nagios kafka rabbitmq nats pulsar zookeeper
    celery airflow dagster prefect luigi spark flink hadoop hive presto trino snowflake bigquery redshift
    databricks dbt looker tableau metabase superset kubernetes k8s k3s eks gke aks helm argocd flux istio linkerd
    envoy nginx haproxy traefik caddy apache docker podman terraform pulumi ansible chef puppet packer vagrant
    vault consul nomad jenkins circleci travis gitlab github bitbucket teamcity buildkite bamboo jira confluence
    trello asana notion linear slack teams zoom okta auth0 keycloak launchdarkly stripe adyen paypal braintree
    twilio sendgrid mailgun cloudflare fastly akamai vercel netlify heroku render fly aws gcp azure s3 ec2 ecs
    lambda rds sqs sns cloudfront route53 iam cloudwatch fargate django flask fastapi rails laravel spring express
    nestjs nextjs next.js nuxt react vue angular svelte ember node node.js deno bun typescript javascript python
    golang rust java kotlin scala ruby php swift elixir erlang haskell clojure pytest jest mocha cypress playwright
    selenium webpack vite babel eslint prettier ruff black mypy flake8 pylint poetry pip pipenv uv npm yarn pnpm
    conda git mercurial bazel gradle maven cmake make pg_dump pg_restore pgbouncer psql graphql grpc openapi
    swagger postman figma sketch excel sheets tensorflow pytorch numpy pandas scikit-learn jupyter mlflow
    kubeflow openai claude chatgpt copilot cursor vscode intellij pycharm vim emacs tmux bash zsh linux ubuntu
    debian alpine centos windows macos ios android outlook gmail bigtable spanner firestore firebase supabase
    neon planetscale cockroachdb timescaledb clickhouse duckdb influxdb victoriametrics thanos cortex mimir
    opentelemetry otel fluentd fluentbit vector filebeat metricbeat 阿里云 腾讯云 华为云 钉钉 飞书 企业微信 微信"""
)
# Two-word products that read like names.
TOOL_PHRASES = _words("github_actions gitlab_ci react_native google_cloud azure_devops visual_studio cloud_run")

# Cities, countries and regions: places.
PLACES = _words(
    """london paris berlin munich hamburg frankfurt cologne vienna zurich geneva amsterdam rotterdam brussels
    dublin lisbon porto madrid barcelona valencia rome milan turin naples florence oslo stockholm copenhagen
    helsinki reykjavik warsaw krakow prague budapest bucharest sofia athens istanbul ankara kyiv moscow riga
    tallinn vilnius edinburgh glasgow manchester birmingham bristol cambridge oxford belfast cardiff
    tokyo osaka kyoto seoul busan beijing shanghai shenzhen hangzhou guangzhou chengdu taipei singapore
    bangkok hanoi manila jakarta kuala mumbai delhi bangalore bengaluru hyderabad chennai pune dubai doha
    riyadh tel aviv cairo lagos nairobi johannesburg capetown sydney melbourne brisbane perth auckland
    wellington toronto montreal vancouver ottawa calgary chicago boston seattle portland denver austin dallas
    houston atlanta miami phoenix detroit philadelphia york francisco diego angeles washington
    mexico brazil argentina chile colombia peru canada usa america germany france spain portugal italy
    netherlands belgium switzerland austria poland sweden norway denmark finland ireland britain england
    scotland wales japan china korea india indonesia vietnam thailand australia zealand africa nigeria kenya
    egypt europe asia emea apac latam
    北京 上海 深圳 广州 杭州 成都 南京 武汉 西安 重庆 天津 苏州 厦门 青岛 大连 长沙 合肥 香港 台北 新加坡 东京"""
)

# Given names across languages: a capitalised name that starts with one is a person.
GIVEN_NAMES = _words(
    """aaron adam adrian ahmed aisha alan albert alex alexander alexandra alice alicia amelia amir amy ana andrea
    andrew andy angela anna anne anton antonio arjun astrid ben benjamin bob brian bruno carla carlos carmen
    caroline catherine charles charlie chloe chris christian christina claire clara daniel dana david diana diego
    dmitri dominik dylan edward elena eli elias elizabeth ella emily emma eric erik esther eva ethan fatima
    felix fernando francesca frank gabriel george grace greta hannah hans harry helen henrik henry hugo ian
    igor ines ingrid isabel isabella ivan jack jacob james jan jane jason javier jennifer jessica joao joe john
    jonas jonathan jorge jose joseph julia julian karen karl kate katarina kenji kevin klaus laura lea lena leo
    leon liam lina linda lisa lucas lucia luis luka maria marco marcus mark martin mary mateo matt matteo
    maya mei michael michelle miguel mike mila mohammed nadia natalia nathan nicolas nina noah nora oliver
    olivia omar oscar pablo patrick paul pedro peter petra philip pierre priya rachel rafael raj rahul ravi
    rebecca ricardo richard robert rosa ryan sam samuel sara sarah sebastian sergei simon sofia sophie stefan
    steve susan sven thomas tim tom tomas victor viktor william yuki yusuf zara zoe hiroshi haruto sakura
    takeshi akira wei jun min ji hye jin ananya aditya vikram deepak neha pooja sunil anil kavya omar hassan
    ali layla yasmin mustafa amara kwame chidi thabo olga natasha anya pavel"""
)
# An organisation's last word: the name is an organisation (kind other).
ORG_LAST = _words("corp corporation inc ltd llc gmbh ag plc co company enterprises industries labs group holdings")
# A project's first word ("Project Atlas").
PROJECT_FIRST = _words("project operation")

# Acronyms and codes that are never names: units, metrics, time zones, quarters, business and tech shorthand.
_NOT_NAMES = _words(
    """env api apis sdk cli ui ux url uri http https tls ssl ssh dns tcp udp ip vpn cdn cpu gpu ram ssd io os vm
    sso mfa otp jwt iam rbac acl pii gdpr hipaa soc sla slo sli kpi okr roi eta eod eow eoy fy qa qe sre ops
    devops dev prod stg uat ci cd pr prs mr mrs etl elt csv json yaml xml html css sql orm db dbs ttl rps qps
    tps mb gb tb kb ms utc gmt cet cest eet est edt pst pdt ist jst cst bst aest eu us uk emea ceo cto cfo coo
    vp pm hr it r&d faq tbd tba fyi wip poc mvp rfc adr sop inc sev oncall ack nack dag dags"""
)
_CODE = re.compile(r"(?:q[1-4]|h[12]|w\d{1,2}|fy\d{2,4}|p\d{2,3}(?:\.\d+)?|sev\d|v\d+(?:\.\d+)*)", re.IGNORECASE)


def never_a_name(word: str) -> bool:
    """A token that is shorthand, not a name: a listed acronym, a quarter/week/fiscal year/percentile/version code
    (Q1, W14, FY25, p95, v2), an acronym's plural (PRs), or any all-capital token of at most three letters that is
    not a known tool (AWS, S3 and EKS are)."""
    key = word.casefold()
    if key in TOOLS:
        return False
    if key in _NOT_NAMES or _CODE.fullmatch(word):
        return True
    if word.endswith("s") and word[:-1].isupper() and len(word) <= 5:
        return True  # PRs, SLOs
    return word.isupper() and len(word) <= 3


# Tools whose names are no English word: found in lower case too ("we run redis") and at a sentence's start.
TOOLS_ANY_CASE = _words(
    """postgres postgresql mysql sqlite redis mongodb elasticsearch opensearch kibana grafana prometheus kafka
    rabbitmq zookeeper celery airflow dagster bigquery snowflake redshift dbt kubernetes k8s k3s kubectl helm
    argocd nginx haproxy docker terraform ansible jenkins jira confluence pagerduty opsgenie okta launchdarkly
    cloudflare django fastapi pytest numpy pandas mypy ruff eslint webpack npm pnpm yarn pip pipenv uv conda
    pg_dump pg_restore pgbouncer psql httpx pydantic graphql grpc sentry datadog zabbix loki clickhouse duckdb
    memcached cassandra dynamodb terraform github gitlab vercel netlify heroku"""
)
