import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { setMembershipEndedHandler, setSignInPolicyHandler } from '../api/client';
import { organisations as organisationsApi, type OrganisationMembership } from '../api/organisations';
import { Loading } from '../components/Notice';
import { OrganisationContext } from './organisation';

/**
 * Loads the person's organisations and the session's one (the layout keys its pages by it, so every page loads
 * its data again after a switch). When the server says the person was removed from the session's
 * organisation, the session moves to the one the server falls back to, and the person is told.
 */
export function OrganisationProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<{
    current: OrganisationMembership | null;
    organisations: OrganisationMembership[];
  }>();
  const [ended, setEnded] = useState<string>();
  const [signInRefusal, setSignInRefusal] = useState<{ code: string; message: string }>();
  const clearSignInRefusal = useCallback(() => setSignInRefusal(undefined), []);

  const reload = useCallback(async () => {
    const list = await organisationsApi.list();
    setState({ current: list.current, organisations: list.organisations });
  }, []);

  const switchTo = useCallback(
    async (organisationId: string) => {
      await organisationsApi.switchTo(organisationId);
      setEnded(undefined);
      await reload();
    },
    [reload],
  );

  useEffect(() => {
    void reload();
    setMembershipEndedHandler(() => {
      void organisationsApi.list().then(async (list) => {
        setEnded('You are no longer a member of the organisation you were working in.');
        const fallback = list.organisations[0];
        if (fallback !== undefined) await organisationsApi.switchTo(fallback.id);
        await reload();
      });
    });
    setSignInPolicyHandler((error) => setSignInRefusal({ code: error.code, message: error.message }));
    return () => {
      setMembershipEndedHandler(() => {});
      setSignInPolicyHandler(() => {});
    };
  }, [reload]);

  if (state === undefined) return <Loading />;
  return (
    <OrganisationContext.Provider
      value={{ ...state, reload, switchTo, notice: ended, signInRefusal, clearSignInRefusal }}
    >
      {children}
    </OrganisationContext.Provider>
  );
}
