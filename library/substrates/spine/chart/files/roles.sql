-- spine: database roles. Run as the superuser, connected to the database `spine` (which exists).
-- Passwords are set separately (the local stack generates them; on Kubernetes they come from the
-- Secret spine-credentials), so this file holds no secret.
CREATE ROLE spine_app LOGIN;        -- the application (every DB-using service)
CREATE ROLE spine_readonly LOGIN;   -- SELECT only
-- The operator: owns the schema (so it may GRANT/REVOKE and renumber messages), may set session
-- defaults of spine_app (CREATEROLE + ADMIN on spine_app, without inheriting its rights), terminate
-- application sessions (pg_signal_backend) and see every session (pg_monitor).
CREATE ROLE spine_operator LOGIN CREATEROLE;
GRANT spine_app TO spine_operator WITH ADMIN TRUE, INHERIT FALSE, SET FALSE;
GRANT pg_signal_backend, pg_monitor TO spine_operator;
GRANT pg_checkpoint TO spine_app;   -- the maintenance job ends its window with CHECKPOINT
-- The harness (fault injection, gates): never handed to an agent.
CREATE ROLE spine_admin LOGIN SUPERUSER;
GRANT spine_operator TO spine_admin;
-- Connection limits on the roles an agent may be handed or reach (the pools of five services take at
-- most 5 x 15 spine_app sessions). Superusers are exempt, and the server reserves slots for them
-- (superuser_reserved_connections), so the harness can always connect.
ALTER ROLE spine_app CONNECTION LIMIT 120;
ALTER ROLE spine_operator CONNECTION LIMIT 20;
ALTER ROLE spine_readonly CONNECTION LIMIT 40;
-- Owning the database lets the operator run ALTER DATABASE spine SET idle_in_transaction_session_timeout.
ALTER DATABASE spine OWNER TO spine_operator;
