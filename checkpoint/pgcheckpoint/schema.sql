-- The tables of github.com/refine-go/refine/checkpoint/pgcheckpoint, schema
-- version 2, in the schema "refine": what pgcheckpoint.New creates when it may.
-- Written by pgcheckpoint.SchemaSQL("refine") (the package's tests check that this
-- file is its output and creates what New creates).
--
-- For a role with no right to create anything: run this as a role that may
-- (psql -v ON_ERROR_STOP=1 -f schema.sql), grant the application's role
--
--   GRANT USAGE ON SCHEMA "refine" TO app;
--   GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "refine" TO app;
--
-- and open the store with pgcheckpoint.Migrate(false), which only checks
-- the version. Running it again changes nothing.
BEGIN;
SET LOCAL lock_timeout = '30s';
SELECT pg_advisory_xact_lock(hashtext('refine-go/pgcheckpoint'), hashtext('refine'));
CREATE SCHEMA IF NOT EXISTS "refine";
CREATE TABLE IF NOT EXISTS "refine".schema_version (
		version    integer     PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
	);
-- Version 1.
CREATE TABLE IF NOT EXISTS "refine".checkpoints (
		session     text        NOT NULL,
		generation  bigint      NOT NULL CHECK (generation > 0),
		token       bigint      NOT NULL DEFAULT 0,
		status      text        NOT NULL DEFAULT '',
		reason      text        NOT NULL DEFAULT '',
		iteration   bigint      NOT NULL DEFAULT 0,
		time        timestamptz NOT NULL,
		time_ns     integer     NOT NULL DEFAULT 0,
		question    text        NOT NULL DEFAULT '',
		fingerprint text        NOT NULL DEFAULT '',
		engine      bytea,
		state       bytea,
		stored_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
		PRIMARY KEY (session, generation)
	);
CREATE TABLE IF NOT EXISTS "refine".leases (
		session     text        PRIMARY KEY,
		holder      text        NOT NULL DEFAULT '',
		token       bigint      NOT NULL CHECK (token > 0),
		expires_at  timestamptz NOT NULL,
		acquired_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		renewed_at  timestamptz NOT NULL DEFAULT clock_timestamp()
	);
INSERT INTO "refine".schema_version (version) VALUES (1) ON CONFLICT DO NOTHING;
-- Version 2.
ALTER TABLE "refine".checkpoints
		ADD COLUMN IF NOT EXISTS best_generation   bigint NOT NULL DEFAULT 0,
		ADD COLUMN IF NOT EXISTS origin_session    text   NOT NULL DEFAULT '',
		ADD COLUMN IF NOT EXISTS origin_generation bigint NOT NULL DEFAULT 0;
INSERT INTO "refine".schema_version (version) VALUES (2) ON CONFLICT DO NOTHING;
COMMIT;
