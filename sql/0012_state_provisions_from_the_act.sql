-- A matter whose value the Act itself fixes (section 5's thirty days to decide a registration)
-- is shown for a state whose rules fix none, marked status 'act' (provisions.table._from_act).
-- Idempotent.
ALTER TABLE state_provisions DROP CONSTRAINT IF EXISTS state_provisions_status_check;
ALTER TABLE state_provisions ADD CONSTRAINT state_provisions_status_check
    CHECK (status IN ('found', 'act', 'not_found'));
