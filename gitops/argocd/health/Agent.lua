-- Argo CD health of an overseer.dev Agent (resource.customizations.health.overseer.dev_Agent).
-- A status older than the spec is Progressing; then by phase: Running with a ready pod
-- and Done are Healthy, Blocked and Failed Degraded, Suspended Suspended. A pod the
-- operator cannot have (refused by the API server, its name another owner's, its image
-- not pulled for three minutes) is Degraded, and so is a running agent with an open
-- critical escalation (it asked for help that nobody has given yet: overseer
-- escalations NAME shows it).
local hs = { status = "Progressing", message = "Waiting for the operator" }
local status = obj.status
if status == nil or status.phase == nil then
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
local unusable = { PodRefused = true, NameTaken = true, ImageNotPulled = true }
local phase = status.phase
local ready = condition("Ready")
if ready ~= nil and ready.status == "False" and unusable[ready.reason] then
  hs.status = "Degraded"
  hs.message = ready.reason .. ": " .. (ready.message or "")
elseif phase == "Done" then
  hs.status = "Healthy"
  hs.message = "Done"
elseif phase == "Blocked" or phase == "Failed" then
  local inLoop = condition("InLoop")
  hs.status = "Degraded"
  hs.message = phase .. ((inLoop and inLoop.reason ~= "") and (": " .. inLoop.reason) or "")
elseif phase == "Suspended" then
  hs.status = "Suspended"
  hs.message = "Suspended"
elseif phase == "Running" then
  local critical = nil
  for _, e in ipairs(status.escalations or {}) do
    if e.state == "Open" and e.severity == "critical" then
      critical = e
    end
  end
  if critical ~= nil then
    hs.status = "Degraded"
    hs.message = "Critical escalation #" .. tostring(critical.id) .. " open (" .. critical.kind .. "): overseer escalations " .. (obj.metadata.name or "")
  elseif ready ~= nil and ready.status == "True" then
    hs.status = "Healthy"
    hs.message = "Running"
  else
    hs.message = "Waiting for the agent's pod" .. ((ready and ready.reason ~= "") and (": " .. ready.reason) or "")
  end
else
  hs.message = phase
end
return hs
