-- Drives a headless Neovim through torchlint's language server: loads the README's
-- configuration (TORCHLINT_README_LUA), then checks diagnostics, a quick fix and fix-all
-- on the buffer. Prints what it sees; exits 0 on success, with cquit N on a failure.
local function say(...)
  io.stdout:write(table.concat(vim.tbl_map(tostring, { ... }), " ") .. "\n")
end

local function fail(message)
  say("FAIL", message)
  vim.cmd("cquit 3")
end

dofile(os.getenv("TORCHLINT_README_LUA"))

local function changed(buf, tick)
  return vim.wait(15000, function() return vim.b[buf].changedtick ~= tick end, 20)
end

vim.api.nvim_create_autocmd("VimEnter", {
  callback = function()
    local buf = vim.api.nvim_get_current_buf()
    if not vim.wait(30000, function() return #vim.diagnostic.get(buf) >= 2 end, 20) then
      return fail("no diagnostics")
    end
    local found = vim.diagnostic.get(buf)
    table.sort(found, function(a, b) return a.lnum < b.lnum end)
    for _, d in ipairs(found) do
      say("DIAGNOSTIC", d.lnum + 1, d.col + 1, d.code, d.source, d.severity)
    end

    -- the preferred quick fix of the first finding, with the cursor on it
    local first = found[1]
    vim.api.nvim_win_set_cursor(0, { first.lnum + 1, first.col })
    local tick = vim.b[buf].changedtick
    vim.lsp.buf.code_action({
      apply = true,
      context = { only = { "quickfix" } },
      filter = function(action) return action.isPreferred end,
    })
    if not changed(buf, tick) then return fail("the quick fix was not applied") end
    say("QUICKFIX", vim.api.nvim_buf_get_lines(buf, first.lnum, first.lnum + 1, false)[1])

    -- fix-all, as the README says to run it
    vim.wait(300)
    tick = vim.b[buf].changedtick
    vim.lsp.buf.code_action({ context = { only = { "source.fixAll.torchlint" } }, apply = true })
    if not changed(buf, tick) then return fail("fix-all was not applied") end
    for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do say("LINE", line) end

    if not vim.wait(30000, function() return #vim.diagnostic.get(buf) == 0 end, 20) then
      return fail("findings remain after fix-all")
    end
    say("CLEAN")
    vim.cmd("qa!")
  end,
})
