-- Snapshots of the folded state: as on SQLite (0011 there). Writers insert
-- them (GRANT INSERT ON snapshots); a writer role without that grant
-- writes none, which costs reads time, never correctness.
CREATE TABLE snapshots (
    seq        bigint  PRIMARY KEY,
    event_hash text    NOT NULL,
    from_seq   bigint  NOT NULL,
    max_at     text    NOT NULL,
    version    integer NOT NULL,
    state_hash text    NOT NULL,
    state      bytea   NOT NULL
);

CREATE TRIGGER snapshots_no_update BEFORE UPDATE ON snapshots
    FOR EACH ROW EXECUTE FUNCTION lockledger_refuse();
CREATE TRIGGER snapshots_no_truncate BEFORE TRUNCATE ON snapshots
    FOR EACH STATEMENT EXECUTE FUNCTION lockledger_refuse();
