-- Argo CD health of an overseer.dev Agent (resource.customizations.health.overseer.dev_Agent).
-- The operator decides every kind's health in one place (src/health.rs) and writes it
-- as the conditions kstatus reads too, so Argo CD, Flux, Helm 4 and `kubectl wait`
-- agree (docs/gitops.md): a status older than the spec is Progressing; Stalled=True is
-- Degraded (it needs a change or a person: the reason says which); an agent suspended
-- by its spec is Suspended; Ready=True is Healthy (running, or finished for good);
-- anything else Progressing.
local hs = { status = "Progressing", message = "Waiting for the operator" }
local status = obj.status
if status == nil or status.observedGeneration == nil then
  return hs
end
if status.observedGeneration ~= obj.metadata.generation then
  hs.message = "The operator has not yet seen this generation"
  return hs
end
local function condition(type_)
  for _, c in ipairs(status.conditions or {}) do
    if c.type == type_ then
      return c
    end
  end
  return nil
end
local function said(c)
  return c.reason .. ((c.message ~= nil and c.message ~= "") and (": " .. c.message) or "")
end
local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = said(stalled)
  return hs
end
if status.phase == "Suspended" then
  hs.status = "Suspended"
  hs.message = "Suspended by spec.suspend"
  return hs
end
local ready = condition("Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = said(ready)
  return hs
end
local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.message = said(reconciling)
elseif ready ~= nil then
  hs.message = said(ready)
end
return hs
