-- spine: tables and grants. Run connected to the database `spine`; objects belong to spine_operator.
SET ROLE spine_operator;

CREATE TABLE users (
    id           integer PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    display_name text NOT NULL,
    last_login   timestamptz
);

-- last_seq is the channel's sequencer: atomic sends increment it under the row's lock.
CREATE TABLE channels (
    id       integer PRIMARY KEY,
    name     text NOT NULL UNIQUE,
    topic    text NOT NULL,
    last_seq bigint NOT NULL DEFAULT 0
);

CREATE TABLE channel_members (
    channel_id integer NOT NULL REFERENCES channels (id),
    user_id    integer NOT NULL REFERENCES users (id),
    PRIMARY KEY (channel_id, user_id)
);

-- seq is dense and unique per channel when healthy. There is deliberately no UNIQUE constraint on
-- (channel_id, seq): a faulty sequencer produces duplicates instead of errors, as in the incident
-- this substrate reproduces, and the gates check the invariant on the data.
CREATE TABLE messages (
    id         bigserial PRIMARY KEY,
    channel_id integer NOT NULL REFERENCES channels (id),
    seq        bigint NOT NULL,
    author     text NOT NULL,
    body       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_channel_seq ON messages (channel_id, seq);

-- Fan-out events that could not be queued in Redis (e.g. Redis out of memory); the fanout worker
-- re-queues them. They count in the fanout backlog.
CREATE TABLE fanout_pending (
    id         bigserial PRIMARY KEY,
    message_id bigint NOT NULL,
    event      text NOT NULL,
    queued_at  timestamptz NOT NULL DEFAULT now()
);

-- Written by the maintenance job: per-channel statistics and its scratch space.
CREATE TABLE channel_stats (
    channel_id integer PRIMARY KEY REFERENCES channels (id),
    messages   bigint NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE TABLE maintenance_scratch (
    id         bigserial PRIMARY KEY,
    channel_id integer NOT NULL,
    payload    text NOT NULL
);

GRANT SELECT ON users, channels, channel_members, messages TO spine_app;
GRANT UPDATE (last_login) ON users TO spine_app;
GRANT UPDATE (last_seq) ON channels TO spine_app;
GRANT INSERT, DELETE ON messages TO spine_app;  -- DELETE: an author deletes their own message
GRANT SELECT, INSERT, DELETE ON fanout_pending TO spine_app;
GRANT SELECT, INSERT, UPDATE ON channel_stats TO spine_app;
GRANT SELECT, INSERT, DELETE, TRUNCATE ON maintenance_scratch TO spine_app;
GRANT USAGE ON SEQUENCE messages_id_seq, fanout_pending_id_seq, maintenance_scratch_id_seq TO spine_app;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO spine_readonly;

RESET ROLE;
